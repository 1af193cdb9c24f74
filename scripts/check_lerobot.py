"""``make check-lerobot``: LeRobot's OpenArm follower drives the twin, unchanged.

LeRobot 0.6.1's ``BiOpenArmFollower`` (two ``OpenArmFollower`` arms, each a
``DamiaoMotorsBus`` of eight drives) connects to ``rob-twin bank --robot openarm`` over
python-can's socketcand interface, reads observations, and streams position actions that
carry both arms from where they hang to a goal pose and hold it there. The script reports,
per arm, the goal error in degrees (LeRobot's own observation and the twin's joint angles
from the bank's status), LeRobot's cycle time (one ``get_observation`` plus one
``send_action`` for both arms: median, p95), the bank's frame counters, and ends with a
one-line verdict; exit 0 when every goal was reached, 1 otherwise.

Run it with the Python of ``.venv-lerobot`` (``make lerobot-venv``: lerobot needs Python >=
3.12); it imports nothing from rob_twin and starts the bank with rob-twin's own command
(``--rob-twin``, default ``.venv/bin/rob-twin``), on 127.0.0.1 with any free ports.
Everything it measures is simulated (the bank's status says ``hardware_io: false``).

LeRobot opens its bus as ``can.interface.Bus(channel, bitrate, interface)``; python-can takes
the socketcand server's host and port from the ``CAN_CONFIG`` environment variable, which this
script sets as an OpenArm owner would in a shell (docs/openarm-software.md, "Your
OpenArm software against the twin"). socketcand carries classic CAN only, so the arms
are configured ``use_can_fd=False``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 90.0
JOINTS = [f"joint_{k}" for k in range(1, 8)]
# goal offsets from the start pose [deg] per side, inside LeRobot's default joint limits of
# that side (config_openarm_follower.py) and the twin's joint ranges; the left arm mirrors the
# right. The left gripper stays at 0: LeRobot limits both grippers to -65..0 deg, while the
# twin's left finger joint (its gripper drive's shaft, 1:1) ranges 0..45 deg.
GOAL_OFFSETS_DEG = {
    "right": {"joint_1": 20, "joint_2": 25, "joint_3": 15, "joint_4": 45}
    | {"joint_5": 20, "joint_6": -15, "joint_7": 20, "gripper": -20},
    "left": {"joint_1": -20, "joint_2": -25, "joint_3": -15, "joint_4": 45}
    | {"joint_5": -20, "joint_6": 15, "joint_7": -20, "gripper": 0},
}
CHANNELS = {"right": "can0", "left": "can1"}  # OpenArm's robot file


def control(port: int, command: dict, timeout: float = 5.0) -> dict:
    """One JSON line to the bank's control port, its one-line reply (docs/BANK_PROTOCOL.md)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(json.dumps(command).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            buf += chunk
    return json.loads(buf)


def start_bank(rob_twin: str, folder: Path) -> tuple[subprocess.Popen, dict]:
    """``rob-twin bank --robot openarm`` on 127.0.0.1, any free ports; its ready file."""
    ready = folder / "bank_ready.json"
    found = Path(rob_twin).resolve() if Path(rob_twin).is_file() else shutil.which(rob_twin)
    if found is None:
        raise RuntimeError(f"no rob-twin command at {rob_twin!r} (make setup makes .venv)")
    proc = subprocess.Popen(
        [str(found), "bank", "--robot", "openarm", "--port", "0", "--control-port", "0"]
        + ["--ready-file", str(ready), "--seconds", "600", "--max-lag", "30"],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "bank.stderr", "w"),  # noqa: SIM115 - closed with the process
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready.exists():
        if proc.poll() is not None:
            err = (folder / "bank.stderr").read_text()[-2000:]
            raise RuntimeError(f"rob-twin bank exited {proc.returncode}: {err}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"rob-twin bank not serving within {START_TIMEOUT_S} s")
        time.sleep(0.1)
    return proc, json.loads(ready.read_text())


def stop_bank(proc: subprocess.Popen, info: dict | None) -> None:
    if proc.poll() is None and info is not None:
        try:
            control(info["control_port"], {"cmd": "shutdown"})
            proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def make_robot(calibration_dir: Path):
    from lerobot.robots.bi_openarm_follower import BiOpenArmFollower, BiOpenArmFollowerConfig
    from lerobot.robots.openarm_follower import OpenArmFollowerConfigBase

    def arm(side: str) -> OpenArmFollowerConfigBase:
        return OpenArmFollowerConfigBase(
            port=CHANNELS[side], side=side, can_interface="socketcand", use_can_fd=False
        )

    return BiOpenArmFollower(
        BiOpenArmFollowerConfig(
            id="twin",
            calibration_dir=calibration_dir,
            left_arm_config=arm("left"),
            right_arm_config=arm("right"),
        )
    )


def smoothstep(s: float) -> float:
    s = min(max(s, 0.0), 1.0)
    return s * s * (3.0 - 2.0 * s)


def percentile(values: list[float], p: float) -> float:
    xs = sorted(values)
    return xs[min(len(xs) - 1, max(0, math.ceil(p / 100.0 * len(xs)) - 1))]


def drive(robot, limits: dict, args) -> dict:
    """Stream the move and the hold at ``args.rate_hz``; the figures."""
    obs0 = robot.get_observation()
    start = {k: float(v) for k, v in obs0.items() if k.endswith(".pos")}
    goal = {}
    for side, offsets in GOAL_OFFSETS_DEG.items():
        for name, off in offsets.items():
            lo, hi = limits[side][name]
            key = f"{side}_{name}.pos"
            goal[key] = min(max(start[key] + off, lo + 1.0), hi - 1.0) if off else start[key]
    period = 1.0 / args.rate_hz
    cycles: list[float] = []
    t0 = time.perf_counter()
    next_t = t0
    while (now := time.perf_counter()) - t0 < args.move_s + args.hold_s:
        s = smoothstep((now - t0) / args.move_s)
        action = {k: start[k] + s * (goal[k] - start[k]) for k in goal}
        c0 = time.perf_counter()
        robot.get_observation()
        robot.send_action(action)
        cycles.append(time.perf_counter() - c0)
        next_t += period
        time.sleep(max(0.0, next_t - time.perf_counter()))
    final = robot.get_observation()
    return {"start": start, "goal": goal, "final": final, "cycles": cycles, "obs0": obs0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rob-twin", default=str(ROOT / ".venv" / "bin" / "rob-twin"))
    ap.add_argument("--json", metavar="PATH", help="also write the figures here (JSON)")
    ap.add_argument("--rate-hz", type=float, default=50.0, help="LeRobot control rate")
    ap.add_argument("--move-s", type=float, default=2.0, help="time to the goal pose [s]")
    ap.add_argument("--hold-s", type=float, default=1.5, help="then hold it [s]")
    ap.add_argument("--tolerance-deg", type=float, default=3.0, help="goal reached within")
    ap.add_argument(
        "--no-tcp-tune",
        dest="tcp_tune",
        action="store_false",
        help="python-can's socketcand client without TCP_NODELAY (its default)",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    result: dict = {"check": "lerobot_openarm_follower", "hardware_io": False}
    try:
        import lerobot

        result["lerobot"] = lerobot.__version__
    except ImportError as err:
        return verdict(result, f"lerobot is not importable ({err}): run make lerobot-venv", args)
    with tempfile.TemporaryDirectory(prefix="check_lerobot_") as tmp:
        folder = Path(tmp)
        info = None
        try:
            proc, info = start_bank(args.rob_twin, folder)
        except (OSError, RuntimeError) as err:
            return verdict(result, f"the bank did not start: {err}", args)
        try:
            return run_check(result, info, folder, args)
        finally:
            stop_bank(proc, info)


def run_check(result: dict, info: dict, folder: Path, args) -> int:
    # python-can reads the socketcand server from CAN_CONFIG (as `export CAN_CONFIG=...`);
    # tcp_tune sets TCP_NODELAY: without it Nagle holds a frame while an earlier one is not
    # yet acknowledged, and LeRobot's disconnect, which closes the socket right after its
    # disable frames with their replies unread, resets the connection with some of them unsent
    config = {"host": "127.0.0.1", "port": info["socketcand_port"], "tcp_tune": args.tcp_tune}
    os.environ["CAN_CONFIG"] = json.dumps(config)
    result["can_config"] = config
    result["bank"] = {"robot": info["robot"], "channels": info["channels"]}
    robot = make_robot(folder / "calibration")
    t0 = time.perf_counter()
    try:
        robot.connect(calibrate=False)  # no calibration prompt: the twin's zero is the model's
    except Exception as err:  # noqa: BLE001 - LeRobot raises ConnectionError and others
        return verdict(result, f"LeRobot could not connect: {err}", args)
    result["connect_s"] = round(time.perf_counter() - t0, 3)
    try:
        limits = {
            "right": robot.right_arm.config.joint_limits,
            "left": robot.left_arm.config.joint_limits,
        }
        run = drive(robot, limits, args)
        status = settled_status(info["control_port"])
    finally:
        robot.disconnect()  # disables torque on every drive
    after = settled_status(info["control_port"])
    if enabled_drives(after):  # its snapshot may still be behind the drives: wait a little
        after = disabled_status(info["control_port"])
    return report(result, run, status, after, args)


def enabled_drives(status: dict) -> list[str]:
    return [
        f"{ch} {d['drive']}"
        for ch, b in status["buses"].items()
        for d in b["drives"]
        if d["enabled"]
    ]


def disabled_status(port: int, wait_s: float = 3.0) -> dict:
    """The bank's status once no drive is enabled, or after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while enabled_drives(status := control(port, {"cmd": "status"})):
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return status


def settled_status(port: int, wait_s: float = 3.0) -> dict:
    """The bank's status once its frame counters stopped moving (three polls 20 ms apart),
    or after ``wait_s``: the status is a snapshot taken after each physics chunk, a few ms
    behind the bus, more on a loaded machine."""
    deadline = time.monotonic() + wait_s
    seen, same = None, 0
    while True:
        status = control(port, {"cmd": "status"})
        frames = [b["command_frames"] for b in status["buses"].values()]
        same = same + 1 if frames == seen else 0
        seen = frames
        if same >= 2 or time.monotonic() > deadline:
            return status
        time.sleep(0.02)


def report(result: dict, run: dict, status: dict, after: dict, args) -> int:
    obs0, goal, final = run["obs0"], run["goal"], run["final"]
    result["observation_keys"] = len(obs0)
    errors: dict = {}
    worst = 0.0
    failures = []
    for side, channel in CHANNELS.items():
        bus = status["buses"][channel]
        twin_deg = [math.degrees(q) for q in bus["joint_positions_rad"]]
        twin_deg.append(math.degrees(bus["gripper_position_rad"]))
        per = {}
        for k, name in enumerate([*JOINTS, "gripper"]):
            key = f"{side}_{name}.pos"
            e_obs = abs(float(final[key]) - goal[key])
            e_twin = abs(twin_deg[k] - goal[key])
            per[name] = {
                "goal_deg": round(goal[key], 2),
                "start_deg": round(run["start"][key], 2),
                "lerobot_observed_deg": round(float(final[key]), 2),
                "twin_deg": round(twin_deg[k], 2),
                "error_deg": round(max(e_obs, e_twin), 3),
            }
            worst = max(worst, e_obs, e_twin)
            if max(e_obs, e_twin) > args.tolerance_deg:
                failures.append(f"{side} {name} {max(e_obs, e_twin):.2f} deg off its goal")
        errors[side] = per
        counters = {k: bus[k] for k in ("command_frames", "replies", "unanswered", "not_for_us")}
        result.setdefault("bank_counters", {})[channel] = counters
        # LeRobot's disconnect sends one disable frame per drive (8): how many the bank got
        got = after["buses"][channel]["command_frames"] - bus["command_frames"]
        result.setdefault("disconnect_frames_received", {})[channel] = got
    still_enabled = enabled_drives(after)
    cycles_ms = [1e3 * c for c in run["cycles"]]
    result.update(
        {
            "goal_error_deg": errors,
            "max_goal_error_deg": round(worst, 3),
            "tolerance_deg": args.tolerance_deg,
            "cycle_ms": {
                "median": round(statistics.median(cycles_ms), 3),
                "p95": round(percentile(cycles_ms, 95), 3),
                "max": round(max(cycles_ms), 3),
                "cycles": len(cycles_ms),
                "what": "one get_observation + one send_action of BiOpenArmFollower (16 drives)",
            },
            "rate_hz": args.rate_hz,
            "move_s": args.move_s,
            "hold_s": args.hold_s,
            "disabled_on_disconnect": not still_enabled,
            "hardware_io": status.get("hardware_io", False),
        }
    )
    if still_enabled:
        failures.append(
            f"drives still enabled after disconnect: {still_enabled} (disable frames the "
            f"bank received: {result['disconnect_frames_received']}, 8 sent per arm)"
        )
    if result["observation_keys"] != 16:
        failures.append(f"{result['observation_keys']} observation keys, expected 16")
    return verdict(result, "; ".join(failures), args)


def verdict(result: dict, failure: str, args) -> int:
    result["ok"] = not failure
    result["failure"] = failure or None
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if failure:
        print(f"check-lerobot: FAIL: {failure}")
        return 1
    c = result["cycle_ms"]
    print(
        f"check-lerobot: PASS: LeRobot {result['lerobot']} BiOpenArmFollower drove both arms of "
        f"the twin over socketcand (connect {result['connect_s']:.2f} s); every goal within "
        f"{result['max_goal_error_deg']:.2f} deg (tolerance {args.tolerance_deg} deg); cycle "
        f"median {c['median']:.2f} ms, p95 {c['p95']:.2f} ms over {c['cycles']} cycles "
        "(simulated, hardware_io: false)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
