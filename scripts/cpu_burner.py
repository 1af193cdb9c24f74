"""CPU burners: ``N`` processes that spin in busy loops, to run the real-time tests beside.

``python scripts/cpu_burner.py -n 2`` starts two worker processes that each keep one core
busy (pure Python arithmetic, no I/O, no memory growth) and prints one line
``cpu_burner: N burners running (pid P)`` on stdout once they run. Everything stops

- on SIGTERM or SIGINT (Ctrl-C),
- when the process that started the burner ends (its parent pid changes; checked every
  ``--check`` seconds), so a killed ``make`` or pytest never leaves burners behind,
- after ``--seconds`` (default 3600 s), a bound of last resort.

Each worker also watches the burner's main process and stops once it is gone. Exit 0 after
a clean stop; a bad argument is an ``InvalidValueError`` naming the value and its valid
range (exit 2). ``make test-under-load`` runs the ``realtime``-marked tests with two of these
beside them.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import sys
import time

STARTED_BY = os.getppid()  # read first: the starter may end while the imports below run

from rob_twin.models.errors import InvalidValueError  # noqa: E402

MAX_BURNERS = 64
MAX_SECONDS = 24 * 3600.0
SPIN_BATCH = 20_000  # loop iterations between two looks at the parent pid (about 1 ms)


class BurnerConfigError(InvalidValueError):
    """A burner argument (count, duration, check period) out of range."""

    subject = "cpu_burner"


def check(count: int, seconds: float, check_s: float) -> None:
    """BurnerConfigError unless 1 <= count <= 64, 0 < seconds <= 86400 s, 0 < check_s <= 10 s."""
    if not 1 <= count <= MAX_BURNERS:
        raise BurnerConfigError("count", count, f"1..{MAX_BURNERS} processes")
    if not 0 < seconds <= MAX_SECONDS:  # also refuses NaN
        raise BurnerConfigError("seconds", seconds, f"(0, {MAX_SECONDS:.0f}] s")
    if not 0 < check_s <= 10.0:
        raise BurnerConfigError("check", check_s, "(0, 10] s")


def spin(main_pid: int) -> None:
    """One worker: busy arithmetic until ``main_pid`` is no longer this process's parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides when to stop
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the main process's handler (forked)
    x = 0
    while os.getppid() == main_pid:
        for i in range(SPIN_BATCH):
            x = (x * 31 + i) & 0xFFFF


def run(count: int, seconds: float, check_s: float = 0.2, out=sys.stdout) -> int:
    """Start ``count`` spinning workers, wait for a stop (signal, parent gone, ``seconds``
    elapsed), end every worker, return 0."""
    check(count, seconds, check_s)
    parent = STARTED_BY
    stop = {"why": None}

    def on_signal(signum, _frame) -> None:
        stop["why"] = signal.Signals(signum).name

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    ctx = mp.get_context("fork")
    workers = [ctx.Process(target=spin, args=(os.getpid(),), daemon=True) for _ in range(count)]
    try:
        for w in workers:
            w.start()
        print(f"cpu_burner: {count} burners running (pid {os.getpid()})", file=out, flush=True)
        end = time.monotonic() + seconds
        while stop["why"] is None:
            if os.getppid() != parent:
                stop["why"] = "parent ended"
            elif time.monotonic() >= end:
                stop["why"] = f"{seconds:g} s elapsed"
            else:
                time.sleep(check_s)
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(timeout=5.0)
            if w.is_alive():
                w.kill()
                w.join(timeout=5.0)
        for s, handler in old.items():
            signal.signal(s, handler)
    print(f"cpu_burner: stopped ({stop['why']})", file=out, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--count", type=int, default=2, help="burner processes (1..64)")
    parser.add_argument(
        "--seconds", type=float, default=3600.0, help="stop after this long [s] (a bound)"
    )
    parser.add_argument(
        "--check", type=float, default=0.2, help="how often the parent is looked at [s]"
    )
    args = parser.parse_args(argv)
    try:
        return run(args.count, args.seconds, args.check)
    except BurnerConfigError as err:
        print(err, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
