"""A ``rob-twin bank`` in a subprocess for tests: started on 127.0.0.1 with any free ports,
waited for (its ready file), shut down through its control port afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent
START_TIMEOUT_S = 90.0


@dataclass
class RunningBank:
    """The bank's process and its ports (``socketcand_port``, ``control_port``)."""

    process: subprocess.Popen
    socketcand_port: int
    control_port: int

    def control(self, command: dict) -> dict:
        from rob_twin.twin.bus.bank_control import control

        return control(self.control_port, command)

    def shutdown(self) -> tuple[str, str]:
        """Ask the bank to stop; its (stdout, stderr)."""
        if self.process.poll() is None:
            self.control({"cmd": "shutdown"})
        return self.process.communicate(timeout=30)


@contextlib.contextmanager
def running_bank(folder: Path, *extra: str) -> Iterator[RunningBank]:
    """A bank serving on 127.0.0.1 (``extra``: more ``rob-twin bank`` options) until the
    block ends; fails the test if it does not serve within ``START_TIMEOUT_S``."""
    ready = folder / "bank_ready.json"
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    process = subprocess.Popen(
        [str(BIN / "rob-twin"), "bank", "--port", "0", "--ready-file", str(ready)]
        + ["--seconds", "120", "--max-lag", "30", *extra],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.exists():
            if process.poll() is not None:
                raise AssertionError(f"bank exited {process.returncode}: {process.stderr.read()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"bank not serving within {START_TIMEOUT_S} s")
            time.sleep(0.1)
        info = json.loads(ready.read_text())
        yield RunningBank(process, info["socketcand_port"], info["control_port"])
    finally:
        if process.poll() is None:
            with contextlib.suppress(Exception):
                RunningBank(process, 0, json.loads(ready.read_text())["control_port"]).shutdown()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


THREAD_WAIT_S = 30.0  # bound on building and stopping an in-thread bank (a loaded machine)


@contextlib.contextmanager
def bank_in_thread(name: str, **overrides) -> Iterator:
    """A real-time bank (``BankProcess``; OpenArm unless ``overrides`` say otherwise, any free
    ports) serving in a thread of this process until the block ends: yields the process once
    it serves; the block's end shuts it down through its control port. An error in the bank
    fails the test that sees it."""
    import threading

    from rob_twin.twin.bus.bank_control import control
    from rob_twin.twin.bus.bank_process import BankConfig, BankProcess

    outcome: dict = {}
    built = threading.Event()

    def run() -> None:  # the MjData belongs to the thread that builds the twin
        try:
            cfg = dict(robot="openarm", port=0, control_port=0, seconds=120, max_lag_s=60.0)
            proc = BankProcess(BankConfig(**{**cfg, **overrides}))
            outcome["proc"] = proc
            built.set()
            outcome["result"] = proc.run()
        except Exception as err:  # noqa: BLE001 - reported by the test that sees it
            outcome["error"] = err
            built.set()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    assert built.wait(THREAD_WAIT_S), "bank not built in time"
    assert "error" not in outcome, outcome
    proc = outcome["proc"]
    deadline = time.monotonic() + THREAD_WAIT_S
    while not proc._snapshot or proc.server is None or not proc.server.port:
        assert thread.is_alive(), f"bank ended at start: {outcome}"
        assert time.monotonic() < deadline, "bank not serving in time"
        time.sleep(0.02)
    try:
        yield proc
    finally:
        if thread.is_alive():
            control(proc.control_port, {"cmd": "shutdown"})
            thread.join(THREAD_WAIT_S)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome
