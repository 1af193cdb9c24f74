"""Why a ``rob-twin host`` stopped before its time: what each owner's latched fault says.

The host stops once every driven owner has latched a fault of its bus or its feedback
(``LOSS_FAULTS``). Those faults have three causes, which a person must not confuse:

- ``deadline_missed``: the host itself was late. A sample's frames (one per joint) took
  longer to write than the publish deadline (``HostConfig.publish_deadline_s``, 20 ms by
  default), so the owner latched ``uncertain_output``: a loaded machine, not a lost bank.
- ``no_feedback``: the bank stopped answering (``stale_feedback``: killed, frozen, unplugged).
- ``connection_closed``: writing a frame failed because the connection closed under the
  host (the bank ended or dropped this client); ``send_failed`` for any other write error.

``ended`` is ``"deadline_missed"`` when every owner stopped for its own deadline, else
``"bank_lost"``. Times in the texts are milliseconds; the report's fields say their units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rob_twin.controllers.owner_types import FaultKind

LOSS_FAULTS = frozenset(
    {FaultKind.STALE_FEEDBACK, FaultKind.UNCERTAIN_OUTPUT, FaultKind.PARTIAL_OUTPUT}
)
# error type names a transport records when a write failed because the link closed
CONNECTION_ERRORS = frozenset(
    {
        "BankConnectionError",
        "BrokenPipeError",
        "ConnectionAbortedError",
        "ConnectionError",
        "ConnectionResetError",
        "CanOperationError",
    }
)


@dataclass(frozen=True)
class ArmLoss:
    """One arm's cause. cause: ``deadline_missed``, ``no_feedback``, ``connection_closed``
    or ``send_failed``; fault: the owner's fault kind; batch_s: how long the late sample
    took to write [s] (deadline_missed only); deadline_s: the publish deadline [s];
    feedback_age_s: time since the arm's newest feedback when the host stopped [s] (inf:
    none ever); feedback_timeout_s: the owner's feedback limit [s]; detail: why the write
    failed (the transport's report), else the owner's fault reason."""

    arm: str
    cause: str
    fault: str
    detail: str
    deadline_s: float
    feedback_age_s: float
    feedback_timeout_s: float
    batch_s: float | None = None

    def text(self) -> str:
        """One phrase for people, e.g. ``right: a sample's frames took 45.2 ms to write,
        25.2 ms over the 20.0 ms batch deadline (its last feedback 3.1 ms before)``."""
        never = math.isinf(self.feedback_age_s)
        age = _ms(self.feedback_age_s)
        if self.cause == "deadline_missed":
            batch = self.batch_s if self.batch_s is not None else math.nan
            last = "no feedback yet" if never else f"its last feedback {age} before"
            return (
                f"{self.arm}: a sample's frames took {_ms(batch)} to write, "
                f"{_ms(batch - self.deadline_s)} over the {_ms(self.deadline_s)} batch "
                f"deadline ({last})"
            )
        if self.cause == "no_feedback":
            silent = "no feedback at all" if never else f"no feedback for {age}"
            return (
                f"{self.arm}: the bank stopped answering: {silent} "
                f"(limit {_ms(self.feedback_timeout_s)})"
            )
        if self.cause == "connection_closed":
            return f"{self.arm}: the connection closed: {self.detail}"
        return f"{self.arm}: writing a sample failed: {self.detail}"

    def report(self) -> dict:
        """The JSON form; times in seconds (None where not a finite number)."""
        return {
            "cause": self.cause,
            "fault": self.fault,
            "batch_s": _s(self.batch_s),
            "deadline_s": _s(self.deadline_s),
            "feedback_age_s": _s(self.feedback_age_s),
            "feedback_timeout_s": _s(self.feedback_timeout_s),
            "text": self.text(),
        }


@dataclass(frozen=True)
class HostLoss:
    """Why the host stopped: ``ended`` (``bank_lost`` or ``deadline_missed``), each arm's
    ``ArmLoss``."""

    ended: str
    arms: tuple[ArmLoss, ...]

    @property
    def reason(self) -> str:
        return "; ".join(a.text() for a in self.arms)

    def report(self) -> dict:
        return {a.arm: a.report() for a in self.arms}


def arm_loss(
    arm: str, driver, now: float, deadline_s: float, started_s: float | None = None
) -> ArmLoss | None:
    """``driver``'s (an ArmDriver) cause, or None when its owner latched no loss fault.
    now: the driver's clock [s]; deadline_s: its transport's publish deadline [s];
    started_s: when the host read the drives' start-up feedback, on that clock [s] (the
    newest feedback until the transport has its own; None: no such read)."""
    owner, transport = driver.owner, driver.transport
    if owner.fault not in LOSS_FAULTS:
        return None
    stamps = list(transport.feedback_received_at.values())
    if not stamps and started_s is not None:
        stamps = [started_s]
    age = now - max(stamps) if stamps else math.inf
    common = dict(
        arm=arm,
        fault=owner.fault.value,
        detail=owner.fault_reason,
        deadline_s=deadline_s,
        feedback_age_s=age,
        feedback_timeout_s=owner.config.feedback_timeout_s,
    )
    if owner.fault is FaultKind.STALE_FEEDBACK:
        return ArmLoss(cause="no_feedback", **common)
    last = transport.last_report
    extra = getattr(last, "extra", None) or {}
    if extra.get("deadline_missed"):
        return ArmLoss(cause="deadline_missed", batch_s=last.duration_s, **common)
    if getattr(last, "reason", ""):  # the write's own account, without the owner's wrapping
        common["detail"] = last.reason
    if extra.get("error") in CONNECTION_ERRORS:
        return ArmLoss(cause="connection_closed", **common)
    return ArmLoss(cause="send_failed", **common)


def why_stopped(
    drivers: dict, now: float, deadline_s: float, started_s: float | None = None
) -> HostLoss | None:
    """The host's reason to stop (every owner latched a loss fault), else None.
    drivers: {Arm: ArmDriver}; now: their clock [s]; deadline_s: the publish deadline [s];
    started_s: when the start-up feedback was read [s] (``arm_loss``)."""
    if not drivers:
        return None
    losses = [arm_loss(arm.value, d, now, deadline_s, started_s) for arm, d in drivers.items()]
    if any(x is None for x in losses):
        return None
    own = all(x.cause == "deadline_missed" for x in losses)
    return HostLoss("deadline_missed" if own else "bank_lost", tuple(losses))


def _ms(seconds: float) -> str:
    return f"{1000.0 * seconds:.1f} ms"


def _s(value: float | None) -> float | None:
    return round(value, 6) if value is not None and math.isfinite(value) else None
