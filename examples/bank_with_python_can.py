"""Drive the simulated motor bank with plain python-can, as a host the twin did not write would.

    python examples/bank_with_python_can.py

Starts ``rob-twin bank`` in a subprocess (socketcand on 127.0.0.1, any free port), opens
python-can's ``socketcand`` interface on ROB's right-arm bus (CAN10), sends position frames
encoded by the project's Amber codec (home pose with joint 4 bent 0.2 rad further), reads the
drives' feedback frames back, decodes them and prints joint 4's measured position as it
moves. Then shuts the bank down over its JSON control port. Simulated (hardware_io: false).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import can
import numpy as np
from rob_twin.controllers.codec import decode_feedback, encode_sample
from rob_twin.models.dimensions import HOME_ARM_POSE
from rob_twin.models.names import FEEDBACK_IDS
from rob_twin.twin.bus.bank_process import control

START_TIMEOUT_S = 90.0


def start_bank(ready: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "rob_twin.cli", "bank", "--host", "127.0.0.1", "--port", "0"]
    cmd += ["--ready-file", str(ready), "--seconds", "60", "--max-lag", "30"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready.exists():
        if proc.poll() is not None:
            raise SystemExit(f"bank exited with {proc.returncode}: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"bank not serving within {START_TIMEOUT_S} s")
        time.sleep(0.1)
    return proc


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_bank(Path(tmp) / "ready.json")
        info = json.loads((Path(tmp) / "ready.json").read_text())
        try:
            bus = can.Bus(
                interface="socketcand",
                channel="CAN10",
                host=info["host"],
                port=info["socketcand_port"],
            )
            target = np.array(HOME_ARM_POSE)
            target[3] += 0.2
            positions = []
            with bus:
                for _ in range(100):  # 100 samples at about 100 Hz: one second
                    for frame in encode_sample(target):
                        bus.send(
                            can.Message(
                                arbitration_id=frame.arbitration_id,
                                data=frame.data,
                                is_extended_id=False,
                            )
                        )
                    msg = bus.recv(timeout=0.01)
                    while msg is not None:
                        if msg.arbitration_id == FEEDBACK_IDS[3]:
                            positions.append(
                                decode_feedback(msg.arbitration_id, msg.data).position_rad
                            )
                        msg = bus.recv(timeout=0)
            print(f"joint 4 target {target[3]:.3f} rad; feedback frames {len(positions)}")
            if positions:
                print(
                    f"joint 4 measured: first {positions[0]:.3f} rad, last {positions[-1]:.3f} rad"
                )
        finally:
            reply = control(info["control_port"], {"cmd": "shutdown"})
            proc.wait(timeout=20)
        return 0 if reply.get("ok") and positions else 1


if __name__ == "__main__":
    raise SystemExit(main())
