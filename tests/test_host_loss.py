"""Why a host stopped, from its owners' latched faults (``twin/bus/host_loss.py``), and the
one stderr line ``rob-twin host`` prints for it: its own batch deadline missed, the bank
stopped answering, or the connection closed. Drivers here are stand-ins holding exactly what
the classifier reads (an owner's fault and the transport's last publish report and feedback
stamps); ``tests/test_host_starts_from_feedback.py`` misses a deadline against a real bank
and ``tests/test_host_lost_bank.py`` kills and freezes one."""

from __future__ import annotations

from types import SimpleNamespace

from rob_twin.cli.bus import host_end_line
from rob_twin.controllers.owner_types import FaultKind
from rob_twin.controllers.publish import PublishOutcome, PublishReport
from rob_twin.models.names import Arm
from rob_twin.twin.bus.host_loss import why_stopped

NOW = 100.0  # the drivers' clock when the host looks [s]
DEADLINE = 0.02  # the host's publish deadline [s]


def _driver(fault, reason="", report=None, fed=(NOW - 0.003,)):
    owner = SimpleNamespace(
        fault=fault, fault_reason=reason, config=SimpleNamespace(feedback_timeout_s=0.5)
    )
    transport = SimpleNamespace(
        last_report=report, feedback_received_at={j + 1: t for j, t in enumerate(fed)}
    )
    return SimpleNamespace(owner=owner, transport=transport)


def _late(batch_s: float) -> PublishReport:
    return PublishReport(
        PublishOutcome.UNCERTAIN,
        (1, 2, 3, 4, 5, 6, 7),
        reason=f"deadline missed: batch took {batch_s:.6f} s > {DEADLINE:.6f} s",
        duration_s=batch_s,
        extra={"deadline_missed": True},
    )


def _report(loss) -> dict:
    return {
        "ended": loss.ended,
        "end_reason": loss.reason,
        "loss": loss.report(),
        "ended_at_s": 2.5,
        "endpoint": "127.0.0.1:29536",
    }


def test_missed_deadlines_on_every_arm_say_the_host_was_late():
    late = FaultKind.UNCERTAIN_OUTPUT
    drivers = {
        Arm.RIGHT: _driver(late, "uncertain output ...", _late(0.0452)),
        Arm.LEFT: _driver(late, "uncertain output ...", _late(0.0301)),
    }
    loss = why_stopped(drivers, NOW, DEADLINE)
    assert loss.ended == "deadline_missed"
    assert loss.report()["right"]["batch_s"] == 0.0452
    assert host_end_line(_report(loss)) == (
        "rob-twin host: stopped after 2.50 s: missed its own batch deadline (right: a "
        "sample's frames took 45.2 ms to write, 25.2 ms over the 20.0 ms batch deadline (its "
        "last feedback 3.0 ms before); left: a sample's frames took 30.1 ms to write, 10.1 ms "
        "over the 20.0 ms batch deadline (its last feedback 3.0 ms before)); the bank at "
        "127.0.0.1:29536 was still answering: the host was late, not the bank (a loaded "
        "machine; --publish-deadline S allows more)"
    )


def test_a_silent_bank_is_a_lost_bank_that_stopped_answering():
    stale = FaultKind.STALE_FEEDBACK
    drivers = {
        Arm.RIGHT: _driver(stale, "feedback age 0.5120 s > 0.5 s", fed=(NOW - 0.512,)),
        Arm.LEFT: _driver(stale, "no feedback for 0.6 s > 0.5 s", fed=()),
    }
    loss = why_stopped(drivers, NOW, DEADLINE)
    assert loss.ended == "bank_lost"
    assert host_end_line(_report(loss)) == (
        "rob-twin host: stopped after 2.50 s: lost the bank at 127.0.0.1:29536 (right: the "
        "bank stopped answering: no feedback for 512.0 ms (limit 500.0 ms); left: the bank "
        "stopped answering: no feedback at all (limit 500.0 ms))"
    )


def test_a_closed_connection_is_a_lost_bank_that_says_so():
    why = (
        "unexpected BankConnectionError sending joint 1: the connection to bus CAN10 at "
        "127.0.0.1:29536 closed while sending id 0x011: Broken pipe (BrokenPipeError)"
    )
    broken = PublishReport(
        PublishOutcome.UNCERTAIN, reason=why, extra={"error": "BankConnectionError"}
    )
    owner_why = f"uncertain output (joints on bus ()): {why}; never retried"
    drivers = {
        Arm.RIGHT: _driver(FaultKind.UNCERTAIN_OUTPUT, owner_why, broken),
        Arm.LEFT: _driver(FaultKind.UNCERTAIN_OUTPUT, "late", _late(0.03)),
    }
    loss = why_stopped(drivers, NOW, DEADLINE)
    assert loss.ended == "bank_lost"  # one arm's closed connection: not the host's lateness
    assert [a.cause for a in loss.arms] == ["connection_closed", "deadline_missed"]
    line = host_end_line(_report(loss))
    assert line.startswith(
        "rob-twin host: stopped after 2.50 s: lost the bank at 127.0.0.1:29536 (right: the "
        f"connection closed: {why}; left: a sample's frames took 30.0 ms to write"
    )


def test_one_arm_still_running_or_another_fault_keeps_the_host_going():
    late = _driver(FaultKind.UNCERTAIN_OUTPUT, "late", _late(0.03))
    assert why_stopped({Arm.RIGHT: late, Arm.LEFT: _driver(None)}, NOW, DEADLINE) is None
    tracking = _driver(FaultKind.TRACKING_ERROR, "joint 1: tracking error 0.15 rad")
    assert why_stopped({Arm.RIGHT: late, Arm.LEFT: tracking}, NOW, DEADLINE) is None
    assert why_stopped({}, NOW, DEADLINE) is None


def test_a_deadline_missed_before_any_feedback_reached_the_transport_counts_from_start_up():
    """The host reads the drives before its transports exist: that read is the newest
    feedback until a transport has its own."""
    early = _driver(FaultKind.UNCERTAIN_OUTPUT, "late", _late(0.03), fed=())
    loss = why_stopped({Arm.RIGHT: early}, NOW, DEADLINE, started_s=NOW - 0.004)
    assert loss.report()["right"]["feedback_age_s"] == 0.004
    assert "was still answering" in host_end_line(_report(loss))
    never = why_stopped({Arm.RIGHT: early}, NOW, DEADLINE)
    assert "(no feedback yet)" in never.reason
    assert "had stopped answering too" in host_end_line(_report(never))
