"""The wire traffic of a LeRobot-style OpenArm session against the twin, as per-frame arrays.

Runs in rob-twin's ``.venv``. Both arms of ``rob_twin.models.robot.robot_of("openarm")`` on
the drives of ``rob-twin bank`` (``LiveDamiaoBank``: seven joint drives and the gripper
drive per bus, every frame answered on receipt), driven in-process, in simulated time, the
way LeRobot 0.6.1's ``BiOpenArmFollower`` drives a real OpenArm at ``--fps``:

- enable: ``FF..FC`` to every ESC id (0x01..0x08) of each bus;
- each cycle k (t = k / fps): the observation, a refresh frame (0x7FF, ``id 00 CC``) per
  drive and the drive's state reply (what LeRobot's ``sync_read_all_states`` sends); then
  the action, an MIT frame per drive: q = the target [rad], dq 0, the follower's default kp
  and kd, tau 0 (``OpenArmFollower.send_action``); then the physics runs to the next cycle
  (1 ms steps, the bank's ``service`` before each).

The targets: each joint's start (the model's ``home`` keyframe) plus three faded-in sines,
inside LeRobot's default joint limits of that side (``config_openarm_follower.py``) and the
model's joint ranges; the right gripper opens and closes between 0 and -40 deg (inside
LeRobot's -65..0), the left stays at 0 (the model's left finger ranges 0..45 deg).

Writes an ``.npz``: ``fps``, ``timestamp`` [s] (rows), per side ``{side}_action_deg`` (rows x
8: joint_1..joint_7, gripper [deg]) and ``{side}_state_frames`` (rows x 8 drives x 8 bytes:
each drive's raw state reply). ``scripts/write_lerobot_fixture.py`` decodes the replies with
LeRobot's own decoder and writes the dataset. Everything here is simulated (no hardware_io).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import can
import mujoco
import numpy as np
from rob_twin.controllers.damiao_codec import (
    MitCommand,
    Scaling,
    SpecialCommand,
    encode_mit,
    encode_refresh,
    special_frame,
)
from rob_twin.models.damiao_motors import MOTORS, OPENARM_GRIPPER_MOTOR, REGISTER_ID
from rob_twin.models.loading import apply_home
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.twin.calibration.parameters import apply_to_model
from rob_twin.twin.drives.damiao_live import LiveDamiaoBank

# LeRobot 0.6.1 OpenArmFollowerConfigBase defaults: joint_1..joint_7, gripper
FOLLOWER_KP = (240.0, 240.0, 240.0, 240.0, 24.0, 31.0, 25.0, 25.0)  # [Nm/rad]
FOLLOWER_KD = (5.0, 5.0, 3.0, 5.0, 0.3, 0.3, 0.3, 0.3)  # [Nm s/rad]
# LeRobot's default joint limits per side [deg] (config_openarm_follower.py), joint_1..gripper
LIMITS_DEG = {
    "right": [(-75, 75), (-9, 90), (-85, 85), (0, 135), (-85, 85), (-40, 40), (-80, 80), (-65, 0)],
    "left": [(-75, 75), (-90, 9), (-85, 85), (0, 135), (-85, 85), (-40, 40), (-80, 80), (-65, 0)],
}
AMPLITUDE_DEG = (12.0, 10.0, 15.0, 15.0, 20.0, 12.0, 20.0)
TONES_HZ = (0.23, 0.61, 1.37)
CHANNELS = {"right": "can0", "left": "can1"}


def targets_deg(side: str, start_deg: np.ndarray, t: float) -> np.ndarray:
    """The eight targets [deg] of ``side`` at ``t`` [s]: joints then gripper."""
    fade = min(t, 1.0) ** 2 * (3.0 - 2.0 * min(t, 1.0))
    sign = 1.0 if side == "right" else -1.0
    out = np.zeros(8)
    for j in range(7):
        wave = sum(
            math.sin(2 * math.pi * f * t + 0.7 * j + 1.3 * i + (0.4 if side == "left" else 0.0))
            for i, f in enumerate(TONES_HZ)
        )
        out[j] = start_deg[j] + sign * fade * AMPLITUDE_DEG[j] * wave / 3.0
    # the grippers hold at 0: the closed-loop twin a replay runs has no gripper drive, so a
    # moving finger (and any contact it makes) would be a motion the replay cannot show
    out[7] = 0.0
    for j, (lo, hi) in enumerate(LIMITS_DEG[side]):
        out[j] = min(max(out[j], lo + 1.0), hi - 1.0) if j < 7 else min(max(out[j], lo), hi)
    return out


def run(seconds: float, fps: int, hidden: dict[str, float] | None = None) -> dict[str, np.ndarray]:
    """The trajectory of ``seconds`` [s] at ``fps`` rows per second, on a twin whose model
    and joint friction carry the ``hidden`` parameter values (rob_twin.twin.calibration
    names: armature, payload, friction terms; None: the robot file's)."""
    robot = robot_of("openarm")
    hidden = dict(hidden or {})
    model = apply_to_model(robot.model(), hidden)
    data = mujoco.MjData(model)
    apply_home(model, data)
    data.qvel[:] = 0.0
    mujoco.mj_forward(model, data)
    wiring = {CHANNELS[s]: Arm(s) for s in CHANNELS}
    # the drives take the hidden drive values (friction, gains, zeros), the model the rest
    bank = LiveDamiaoBank(robot, model, data, wiring, fd=False, now=0.0, values=hidden)
    scalings = [Scaling.of(MOTORS[m]) for m in robot.motors] + [Scaling.of(OPENARM_GRIPPER_MOTOR)]
    dt = float(model.opt.timestep)
    steps = round(1.0 / (fps * dt))
    now = 0.0

    def send(side: str, arb: int, payload: bytes) -> list[can.Message]:
        msg = can.Message(arbitration_id=arb, data=payload, is_extended_id=False)
        return bank.respond(CHANNELS[side], msg)

    for side in CHANNELS:
        for esc in range(1, 9):
            send(side, esc, special_frame(SpecialCommand.ENABLE))
    start = {
        s: np.degrees([data.qpos[model.joint(n).qposadr[0]] for n in robot.joints(s)])
        for s in CHANNELS
    }
    rows = round(seconds * fps)
    out: dict[str, np.ndarray] = {"fps": np.array(fps), "timestamp": np.arange(rows) / fps}
    for s in CHANNELS:
        out[f"{s}_action_deg"] = np.zeros((rows, 8))
        out[f"{s}_state_frames"] = np.zeros((rows, 8, 8), np.uint8)
    for k in range(rows):
        t = k / fps
        for s in CHANNELS:
            for esc in range(1, 9):
                replies = send(s, REGISTER_ID, encode_refresh(esc))
                if len(replies) != 1 or replies[0].arbitration_id != esc + 0x10:
                    raise RuntimeError(f"{s} drive {esc}: no state reply at t={t:.3f} s")
                out[f"{s}_state_frames"][k, esc - 1] = np.frombuffer(
                    bytes(replies[0].data), np.uint8
                )
            target = targets_deg(s, start[s], t)
            out[f"{s}_action_deg"][k] = target
            for esc in range(1, 9):
                cmd = MitCommand(
                    math.radians(target[esc - 1]),
                    0.0,
                    FOLLOWER_KP[esc - 1],
                    FOLLOWER_KD[esc - 1],
                    0.0,
                )
                send(s, esc, encode_mit(cmd, scalings[esc - 1], esc))
        for _ in range(steps):
            bank.service(now, dt)
            mujoco.mj_step(model, data)
            now += dt
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the .npz to write")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--fps", type=int, default=100)
    ap.add_argument(
        "--hidden",
        type=Path,
        help="a JSON object of parameter values the twin carries (the truth a fit must find)",
    )
    args = ap.parse_args(argv)
    hidden = json.loads(args.hidden.read_text()) if args.hidden else None
    arrays = run(args.seconds, args.fps, hidden)
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {args.out}: {len(arrays['timestamp'])} rows at {args.fps} fps (simulated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
