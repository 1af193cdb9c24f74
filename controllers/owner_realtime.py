"""The arm owner's real-time runner: tick every ``period_s`` on a dedicated thread."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

from rob_twin.controllers.errors import OwnerConfigError
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_types import FaultKind, TickReport
from rob_twin.models.errors import describe


def run_realtime(
    owner: ArmOwner,
    stop_event: threading.Event,
    on_report: Callable[[TickReport], None] | None = None,
) -> None:
    """Tick ``owner`` every ``period_s`` [s] on its clock until ``stop_event`` is set.

    Meant for a dedicated thread with a real clock (``MonotonicClock``); deadlines
    are absolute, so a slow tick does not shift later ones (a missed one shows up
    as ``gap_periods`` in the next report).

    A failing ``on_report`` cannot end the loop (the arm would be left unsupervised): it
    latches INTERNAL_ERROR and the loop keeps ticking; an unreadable clock waits one
    period (the tick latches INVALID_CLOCK)."""
    dt = owner.config.period_s
    deadline = owner.clock.now()
    while not stop_event.is_set():
        rep = owner.tick()
        if on_report:
            try:
                on_report(rep)
            except Exception as err:  # noqa: BLE001 - the loop outlives its observer
                owner.latch_fault(
                    FaultKind.INTERNAL_ERROR,
                    f"on_report raised {type(err).__name__}: {describe(str(err))}",
                )
        deadline += dt
        wait = deadline - owner.clock.now()
        if not math.isfinite(wait):
            stop_event.wait(dt)
            deadline = owner.clock.now()
        elif wait > 0:
            stop_event.wait(wait)
        else:
            deadline = owner.clock.now()


def start_realtime_thread(
    owner: ArmOwner, on_report=None
) -> tuple[threading.Thread, threading.Event]:
    """Start ``run_realtime(owner, ...)`` in a daemon thread; set the event and join to end it."""
    if not isinstance(owner, ArmOwner):
        raise OwnerConfigError("owner", owner, "an ArmOwner")
    if on_report is not None and not callable(on_report):
        raise OwnerConfigError("on_report", on_report, "a callable(TickReport) or None")
    ev = threading.Event()
    th = threading.Thread(
        target=run_realtime,
        args=(owner, ev, on_report),
        name=f"owner-{owner.arm.value}",
        daemon=True,
    )
    th.start()
    return th, ev
