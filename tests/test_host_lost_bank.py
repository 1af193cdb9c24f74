"""A host whose bank dies (kill -9) or freezes (SIGSTOP) stops on its own, says why, exits 1.

The bank (``rob-twin bank``) and the host (``rob-twin host``) are subprocesses on
127.0.0.1 (ports chosen by the OS); the host is asked to run 120 s, so ending sooner
shows it stopped for the lost bank. Every wait is bounded and every process is ended
by the test. The bank may fall 30 s behind real time (a busy machine) before it stops on
its own, and the host's publication deadline is widened by the machine's measured jitter
(``machine_jitter``) when busy, so that only the lost bank stops it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from realtime_support import host_publish_deadline

pytestmark = pytest.mark.realtime
ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 60.0  # bound on any wait (a loaded 2-core machine), never a speed figure
HOST_SECONDS = 120.0
ENV = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}


def _cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rob_twin.cli.main", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
    proc.wait(timeout=WAIT_S)


@pytest.fixture
def bank(tmp_path):
    ready = tmp_path / "ready.json"
    proc = _cli(
        "bank", "--port", "0", "--ready-file", str(ready), "--seconds", "300", "--max-lag", "30"
    )
    proc.args_ready = ready
    try:
        deadline = time.monotonic() + WAIT_S
        while not ready.exists():
            assert proc.poll() is None, f"bank exited: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "bank not serving in time"
            time.sleep(0.05)
        yield proc, json.loads(ready.read_text())
    finally:
        _end(proc)


def _host_losing_its_bank(bank, jitter, lose, *options: str) -> tuple[int, str, str]:
    """Start a host against ``bank`` (its publication deadline widened by ``jitter``), call
    ``lose(bank process)`` once it streams, and return the host's exit code, stdout and
    stderr."""
    proc, info = bank
    port = str(info["socketcand_port"])
    publish = host_publish_deadline(jitter)
    host = _cli(
        "host", "--port", port, "--seconds", str(HOST_SECONDS), "--publish-deadline", publish,
        *options,
    )  # fmt: skip
    try:
        seen = ""
        deadline = time.monotonic() + WAIT_S
        while "host: streaming" not in seen:  # bounded: the host prints it or exits
            line = host.stderr.readline()
            assert line or host.poll() is None, f"host ended before streaming: {seen}"
            seen += line
            assert time.monotonic() < deadline, "host not streaming in time"
        lose(proc)
        out, err = host.communicate(timeout=WAIT_S)
    finally:
        _end(host)
    return host.returncode, out, seen + err


def _check_one_line_why(rc: int, err: str) -> None:
    assert "Traceback" not in err, err
    assert rc == 1, (rc, err)
    lines = [ln for ln in err.splitlines() if ln.startswith("rob-twin host:")]
    assert len(lines) == 1 and "lost the bank" in lines[0], err


def test_host_stops_when_its_bank_is_killed(bank, machine_jitter):
    rc, out, err = _host_losing_its_bank(bank, machine_jitter, lambda p: p.kill())
    _check_one_line_why(rc, err)
    assert out.startswith("host: ") and "ended: bank_lost" in out  # human output by default
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_host_stops_when_its_bank_is_frozen(bank, machine_jitter):
    freeze = lambda p: p.send_signal(signal.SIGSTOP)  # noqa: E731
    rc, out, err = _host_losing_its_bank(bank, machine_jitter, freeze, "--json")
    _check_one_line_why(rc, err)
    report = json.loads(out)
    assert report["ended"] == "bank_lost"
    assert report["ended_at_s"] < HOST_SECONDS
    for arm in report["arms"].values():
        assert arm["fault"] in ("stale_feedback", "uncertain_output", "partial_output")
