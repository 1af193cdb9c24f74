"""``scripts/cpu_burner.py`` (the load beside ``make test-under-load``): its workers spin,
it stops on SIGTERM and when the process that started it ends, and bad arguments are refused
by name with exit 2. Each burner here runs well under a second."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "cpu_burner.py"
WAIT_S = 30.0  # bound on any wait (a loaded machine), never a speed figure


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _user_ticks(pid: int) -> int:
    """CPU time ``pid`` spent in user mode [clock ticks] (/proc/PID/stat, field 14)."""
    return int(Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[11])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[1].startswith("Z"))


def _wait_gone(pids: list[int]) -> None:
    end = time.monotonic() + WAIT_S
    while any(_alive(p) for p in pids):
        assert time.monotonic() < end, f"still running: {[p for p in pids if _alive(p)]}"
        time.sleep(0.05)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_two_burners_spin_and_stop_on_sigterm():
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "-n", "2", "--check", "0.05"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("cpu_burner: 2 burners running"), line
        workers = _children(proc.pid)
        assert len(workers) == 2
        ticks = [
            int(Path(f"/proc/{w}/stat").read_text().split(") ")[1].split()[11]) for w in workers
        ]
        time.sleep(0.3)
        later = [
            int(Path(f"/proc/{w}/stat").read_text().split(") ")[1].split()[11]) for w in workers
        ]
        assert all(b > a for a, b in zip(ticks, later, strict=True)), (ticks, later)  # user time
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "stopped (SIGTERM)" in out, out
    _wait_gone(workers)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_burners_stop_when_the_process_that_started_them_ends():
    # a shell starts the burner in the background and exits: the burner is orphaned
    shell = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" "{SCRIPT}" -n 1 --check 0.05 >/dev/null & echo $!; '
         "sleep 1.5"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )  # fmt: skip
    pid = int(shell.stdout.split()[0])
    _wait_gone([pid])


@pytest.mark.parametrize(
    "args, field",
    [(["-n", "0"], "count"), (["-n", "65"], "count"), (["--seconds", "nan"], "seconds")]
    + [(["--seconds", "-1"], "seconds"), (["--check", "0"], "check")],
)
def test_bad_arguments_are_refused_by_name_with_exit_2(args, field):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=WAIT_S
    )
    assert done.returncode == 2 and done.stdout == "", done
    assert f"cpu_burner {field}=" in done.stderr and "valid:" in done.stderr, done.stderr
