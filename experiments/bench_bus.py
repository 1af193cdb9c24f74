"""Benchmark: the bus as it really is (simulated; hardware_io: false).

- timing-layer cost: closed-loop simulated seconds per CPU second with the CAN timing
  layer off and on (classic 1 Mbit/s, exact stuffing), interleaved rounds so machine
  noise hits both alike (aim: on costs <= 1.3x off);
- bus load and command-to-drive latency at ROB's configuration (7 joints x 200 Hz
  commands + feedback per bus) for classic 1 Mbit/s, 500 kbit/s, 250 kbit/s and CAN FD
  1/5 Mbit/s: measured in the closed loop (exact stuffing) and budgeted (worst case);
- two processes over socketcand on 127.0.0.1: host tick jitter and ping round trip
  through the real-time bank process on this (shared, 2-core) machine;
- replay: frames per second read and re-simulated from a 60 s recording (.blf, .log);
- socketcand fan-out: feedback frames/s and ping round trip of one normal client with 0,
  20 and 200 other clients and with 20 stalled clients plus a flood, side by side
  (``rob_twin.experiments.socketcand_fanout``; aim: stalled within 20 % of alone).

``python -m rob_twin.experiments.bench bus`` -> out/bench/bus.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rob_twin.experiments.registry import benchmark
from rob_twin.experiments.socketcand_fanout import fanout
from rob_twin.models.names import Arm
from rob_twin.twin.bus.budget import BusBudgetConfig, bus_budget
from rob_twin.twin.bus.frame_bits import Stuffing
from rob_twin.twin.bus.host_process import wave_around
from rob_twin.twin.bus.recording import TrafficRecorder
from rob_twin.twin.bus.replay import read_recording, replay
from rob_twin.twin.bus.timing import BusTimingConfig, parse_bus_spec
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig

ROUNDS = 4
SECONDS = 2.0
BUSES = {
    "classic 1 Mbit/s": "1M",
    "classic 500 kbit/s": "500k",
    "classic 250 kbit/s": "250k",
    "CAN FD 1/5 Mbit/s": "fd:1M/5M",
}


def _loop(bus: BusTimingConfig | None, feedback_hz: float = 20.0) -> ClosedLoop:
    """Both arms streaming a gentle wave (0.15 rad around their start) at 60 Hz: it runs
    for minutes without a fault (the rehearsal's larger wave meets a tracking fault
    after about 14 s, so it would stop the streaming under a 60 s recording)."""
    lp = ClosedLoop(ClosedLoopConfig(bus_timing=bus, feedback_rate_hz=feedback_hz))
    cfg = lp.config.owner
    lo, hi = np.array(cfg.position_lower) + 0.01, np.array(cfg.position_upper) - 0.01
    for k, arm in enumerate(Arm):
        lp.stream_targets(arm, wave_around(np.clip(lp.measured(arm), lo, hi), k, lo, hi), 60.0)
    return lp


def _cpu_rate(bus: BusTimingConfig | None, feedback_hz: float) -> float:
    with _loop(bus, feedback_hz) as lp:
        lp.run_for(0.2)
        c0 = time.thread_time()
        lp.run_for(SECONDS)
        return SECONDS / (time.thread_time() - c0)


def timing_cost() -> dict:
    out = {}
    for fb in (20.0, 200.0):
        off, on = [], []
        for _ in range(ROUNDS):
            off.append(_cpu_rate(None, fb))
            on.append(_cpu_rate(BusTimingConfig(), fb))
        off_m, on_m = sorted(off)[len(off) // 2], sorted(on)[len(on) // 2]
        out[f"feedback_{int(fb)}hz"] = {
            "sim_s_per_cpu_s_off": round(off_m, 3),
            "sim_s_per_cpu_s_on": round(on_m, 3),
            "cost_ratio_on_over_off": round(off_m / on_m, 3),
            "rounds": ROUNDS,
            "aim": "<= 1.3",
            "meets_aim": off_m / on_m <= 1.3,
        }
    return out


def rob_configuration() -> dict:
    rows = {}
    for label, spec in BUSES.items():
        bus = parse_bus_spec(spec)
        with _loop(bus) as lp:
            lp.run_for(SECONDS)
            rep = lp.bus_report()
            faults = [lp.drivers[a].owner.fault.value for a in Arm if lp.drivers[a].owner.fault]
        b = rep["CAN10"]
        budget = bus_budget(
            BusBudgetConfig(
                bus=BusTimingConfig(
                    bitrate_bps=bus.bitrate_bps,
                    frame_format=bus.frame_format,
                    data_bitrate_bps=bus.data_bitrate_bps,
                    stuffing=Stuffing.WORST,
                )
            ),
            200.0,
            20.0,
        )
        rows[label] = {
            "closed_loop_exact_stuffing": {
                "load": b["load"],
                "command_to_drive_p50_us": b["command_to_drive_latency"]["p50_us"],
                "command_to_drive_p99_us": b["command_to_drive_latency"]["p99_us"],
                "command_to_drive_max_us": b["command_to_drive_latency"]["max_us"],
                "queue_p99_us": b["queue_latency"]["p99_us"],
                "frames": b["frames"],
                "owner_faults": faults,
            },
            "budget_worst_case": {
                k: budget[k]
                for k in (
                    "offered_load",
                    "worst_command_to_drive_us",
                    "bound_command_to_drive_us",
                    "simulated_max_command_to_drive_us",
                    "fits",
                )
            },
        }
    return {
        "configuration": "per bus: 7 joints x 200 Hz position commands (3 bytes) + 7 x 20 Hz "
        "feedback (8 bytes); closed loop streams a wave at 60 Hz",
        "buses": rows,
    }


def two_process(seconds: float = 5.0) -> dict:
    from rob_twin.twin.bus.bank_process import control
    from rob_twin.twin.bus.host_process import HostConfig, run_host

    with tempfile.TemporaryDirectory() as tmp:
        ready = Path(tmp) / "ready.json"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rob_twin.cli.main",
                "bank",
                "--port",
                "0",
                "--ready-file",
                str(ready),
                "--seconds",
                "120",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "MUJOCO_GL": "egl"},
        )
        try:
            deadline = time.monotonic() + 90
            while not ready.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    why = proc.stderr.read() if proc.poll() is not None else "timeout"
                    return {"error": f"bank did not start: {why}"}
                time.sleep(0.1)
            info = json.loads(ready.read_text())
            rep = run_host(
                HostConfig(
                    port=info["socketcand_port"],
                    seconds=seconds,
                    stream="wave",
                    ping_hz=100.0,
                    publish_deadline_s=0.25,
                    feedback_timeout_s=1.0,
                )
            )
            status = control(info["control_port"], {"cmd": "status"})
            control(info["control_port"], {"cmd": "shutdown"})
            proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    return {
        "link": "socketcand on 127.0.0.1, bank paced in real time (100 Hz feedback)",
        "seconds": seconds,
        "host_rate_hz": rep["rate_hz"],
        "tick_jitter_us": rep["tick_jitter"],
        "ping_round_trip_us": rep["ping_round_trip"],
        "bank_max_lag_s": status.get("max_lag_s"),
        "owner_faults": {a: x["fault"] for a, x in rep["arms"].items()},
        "note": "ping: host -> socketcand -> bank step loop (1 ms physics, 2 steps a wake) -> "
        "host; on a shared 2-core machine",
    }


def replay_speed(seconds: float = 60.0) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in (".blf", ".log"):
            path = Path(tmp) / f"run{suffix}"
            with _loop(None) as lp:
                rec = TrafficRecorder(lp, path)
                lp.run_for(seconds)
                rec.close()
            t0 = time.perf_counter()
            recording = read_recording(path)
            read_s = time.perf_counter() - t0
            res = replay(recording)
            total = read_s + res.wall_s
            out[suffix] = {
                "frames_in_file": len(recording.frames),
                "host_frames_fed": res.frames_fed,
                "read_s": round(read_s, 3),
                "resimulate_s": round(res.wall_s, 3),
                "frames_per_s_read_and_resimulated": round(len(recording.frames) / total, 1),
                "feedback_mismatches": res.feedback_mismatches,
                "simulated_s": round(res.simulated_s, 3),
            }
    return out


@benchmark("bus")
def run() -> dict:
    return {
        "timing_layer_cost": timing_cost(),
        "rob_configuration": rob_configuration(),
        "two_process_loopback": two_process(),
        "replay_60s": replay_speed(),
        "socketcand_fanout": fanout(),
        "hardware_io": False,
    }
