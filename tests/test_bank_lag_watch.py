"""The mirror's watch on a simulated bank's lag (``rob_twin.twin.bus.bank_lag_watch``).

A ``rob-twin bank`` on a loaded machine lags the wall clock, and its replies then show an
arm some ms behind: the mirror leaves replies stamped in such an interval out of its alarm
statistic (counted), judges the rest, and holds each reply until the watch knows its time.
Offline and fast: answers are fed by hand; the poller talks to a stand-in control port on
127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import threading

import can
import pytest
from rob_twin.models.names import Arm
from rob_twin.twin.bus.bank_lag_watch import (
    CLEAR,
    LAGGED,
    PENDING,
    UNKNOWN,
    BankLagPoller,
    BankLagWatch,
    LagGate,
    not_observable,
)
from rob_twin.twin.bus.mirror import MirrorTwin
from rob_twin.twin.bus.mirror_alarm import MirrorInputError


# ---------------------------------------------------------------------- the watch
def test_a_lagged_interval_is_excluded_from_the_earlier_answer_less_the_lag_to_settle():
    w = BankLagWatch(threshold_s=0.005, settle_s=0.2)
    w.observe(10.0, 0.001, 0.001)
    w.observe(10.05, 0.02, 0.02)  # the bank lagged 20 ms: [10.0 - 0.02, 10.05 + 0.2]
    assert w.state_at(9.97) == CLEAR
    assert w.state_at(9.99) == LAGGED  # its replies then already showed the arm behind
    assert w.state_at(10.03) == LAGGED
    assert w.state_at(10.2) == LAGGED  # settling, though no answer covers it yet
    assert w.state_at(10.26) == PENDING  # after the latest answer and the settle
    # clear again: the lag ended somewhere since 10.05, so it settles until 10.1 + 0.2
    w.observe(10.1, 0.0, 0.02)
    assert w.state_at(10.26) == LAGGED and w.state_at(10.31) == PENDING
    w.observe(10.4, 0.0, 0.02)  # clear at both ends, no new peak: nothing more excluded
    assert w.state_at(10.31) == CLEAR
    assert math.isclose(w.excluded_s(0.0, 20.0), 0.32, abs_tol=1e-9)
    assert math.isclose(w.excluded_s(10.0, 10.1), 0.1, abs_tol=1e-9)
    r = w.report()
    assert r["answers"] == 4 and r["excluded_intervals"] == 1 and r["max_lag_seen_s"] == 0.02


def test_a_peak_between_two_polls_excludes_only_when_beyond_the_threshold():
    w = BankLagWatch(threshold_s=0.005, settle_s=0.1)
    w.observe(1.0, 0.0, 0.0)
    w.observe(1.05, 0.0, 0.003)  # a 3 ms peak in between: the bank's jitter, judged
    assert w.state_at(1.02) == CLEAR
    w.observe(1.10, 0.0, 0.03)  # a 30 ms peak the polls fell between
    assert w.state_at(1.07) == LAGGED
    assert w.state_at(1.19) == LAGGED and w.state_at(1.21) == PENDING


def test_a_silent_control_port_makes_its_gap_unknown_never_clear():
    w = BankLagWatch(max_gap_s=0.5)
    w.observe(1.0, 0.0, 0.0)
    w.unanswered(1.05, "TimeoutError: no answer")
    assert w.answering is False and w.unanswered_since_s == 1.05
    assert w.state_at(1.5) == PENDING
    w.observe(2.0, 0.0, 0.0)
    assert w.state_at(1.5) == UNKNOWN
    assert math.isclose(w.unknown_s(0.0, 3.0), 1.0)
    assert w.answering is True and w.unanswered_since_s is None
    w.observe(3.0, 0.0, 0.0)  # a long gap without a failed poll: covered by answers
    assert w.state_at(2.5) == CLEAR


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: BankLagWatch(threshold_s=-0.001), "bank_lag_threshold_s"),
        (lambda: BankLagWatch(settle_s=math.nan), "bank_lag_settle_s"),
        (lambda: BankLagWatch(max_gap_s=True), "bank_lag_max_gap_s"),
        (lambda: LagGate(BankLagWatch(), max_wait_s="1"), "bank_lag_max_wait_s"),
        (lambda: BankLagWatch().observe(1.0, None, 0.0), "bank status lag_s"),
        (lambda: BankLagWatch().observe(1.0, 0.0, math.inf), "bank status max_lag_s"),
        (lambda: BankLagPoller(29999, BankLagWatch(), "127.0.0.1", poll_s=0), "bank_lag_poll_s"),
        (lambda: MirrorTwin({"right": [0.0] * 7}, 0.0, 0.02, lag_gate=3), "lag_gate"),
    ],
)
def test_bad_input_is_a_typed_error_naming_the_value_and_its_range(make, field):
    with pytest.raises(MirrorInputError) as err:
        make()
    assert err.value.field == field and err.value.valid


def test_answers_out_of_time_order_are_refused():
    w = BankLagWatch()
    w.observe(5.0, 0.0, 0.0)
    with pytest.raises(MirrorInputError, match="at_s"):
        w.observe(4.0, 0.0, 0.0)


# ---------------------------------------------------------------------- the gate
def test_the_gate_holds_samples_until_known_then_releases_them_in_order():
    w = BankLagWatch(threshold_s=0.005, settle_s=0.0)
    gate: LagGate[str] = LagGate(w, max_wait_s=0.5)
    for stamp, name in ((5.0, "a"), (5.1, "b"), (5.2, "c")):
        gate.push(stamp, name)
    assert gate.release(5.2) == [] and len(gate) == 3  # nothing known yet: all pending
    w.observe(5.05, 0.0, 0.0)
    assert gate.release(5.2) == [("a", CLEAR)]
    w.observe(5.15, 0.02, 0.02)  # lagged from 5.05 - 0.02 to 5.15: "b" left out
    assert gate.release(5.2) == [("b", LAGGED)]
    assert gate.release(5.69) == []  # "c" waited 0.49 s: still held
    assert gate.release(5.71) == [("c", UNKNOWN)]  # past max_wait_s: judged unknowing
    assert (gate.excluded, gate.unknown, len(gate)) == (1, 1, 0)
    gate.push(6.0, "d")
    assert gate.release(6.0, final=True) == [("d", UNKNOWN)]
    r = gate.report(start_s=5.0)
    assert r["observable"] is True and r["excluded_samples"] == 1
    assert math.isclose(r["excluded_for_bank_lag_s"], 0.12)
    assert r["judged_without_lag_knowledge_samples"] == 2 and r["held_samples"] == 0
    assert not_observable("no port")["observable"] is False
    assert not_observable("no port")["excluded_for_bank_lag_s"] is None


# ---------------------------------------------------------------------- the mirror
def _off_frame(mirror: MirrorTwin, stamp_s: float, off_rad: float) -> can.Message:
    """Joint 1's reply at ``stamp_s`` [s]: the twin's position plus ``off_rad`` [rad]."""
    q = float(mirror.twin.data.qpos[mirror._qpos[Arm.RIGHT][0]])
    fr = mirror.bank.drives_of(Arm.RIGHT).drives[0].feedback_frame(q + off_rad, 0.0)
    return can.Message(
        timestamp=stamp_s, arbitration_id=fr.arbitration_id, data=fr.data, is_extended_id=False
    )


@pytest.mark.parametrize("lagged", [True, False])
def test_a_reply_in_a_lagged_interval_is_excluded_and_counted_the_same_reply_clear_alarms(
    lagged,
):
    watch = BankLagWatch()
    mirror = MirrorTwin({"right": [0.0] * 7}, 100.0, 0.02, lag_gate=LagGate(watch))
    try:
        # 0.1 rad off: beyond the 0.02 rad tolerance, an alarm at once without a gate
        assert mirror.handle(Arm.RIGHT, _off_frame(mirror, 100.5, 0.1)) is None  # held
        assert mirror.alarms == [] and len(mirror.lag_gate) == 1
        watch.observe(100.45, 0.02 if lagged else 0.0, 0.02 if lagged else 0.0)
        watch.observe(100.55, 0.0, 0.02 if lagged else 0.0)
        alarms = mirror.judge_pending()
        s = mirror.summary()["arms"]["right"]
    finally:
        mirror.close()
    assert s["feedback_frames"][0] == 1  # compared either way (the difference is real)
    if lagged:
        assert alarms == [] and mirror.alarms == []
        assert s["frames_excluded_for_bank_lag"] == [1, 0, 0, 0, 0, 0, 0]
    else:
        assert [(a.joint, a.statistic) for a in alarms] == [(1, "max")]
        assert mirror.pop_alarms() == alarms and mirror.pop_alarms() == []
        assert s["frames_excluded_for_bank_lag"] == [0] * 7


def test_without_a_gate_a_reply_is_judged_at_once():
    mirror = MirrorTwin({"right": [0.0] * 7}, 100.0, 0.02)
    try:
        alarm = mirror.handle(Arm.RIGHT, _off_frame(mirror, 100.5, 0.1))
        assert alarm is not None and alarm.joint == 1
        assert mirror.judge_pending(final=True) == []
    finally:
        mirror.close()


# ---------------------------------------------------------------------- the poller
class _ControlStandIn:
    """A TCP port on 127.0.0.1 that answers each line with ``reply`` (a bank's, or not)."""

    def __init__(self, reply: dict):
        self.reply, self.asked = reply, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._serve, daemon=True)
        self._t.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1.0)
                with contextlib.suppress(OSError):
                    conn.recv(4096)
                    self.asked += 1
                    conn.sendall((json.dumps(self.reply) + "\n").encode())

    def close(self) -> None:
        self._stop.set()
        self._t.join(timeout=2)
        self.sock.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_poller_feeds_the_watch_and_refuses_a_port_that_is_no_bank():
    bank = _ControlStandIn({"ok": True, "sim_time_s": 3.0, "lag_s": 0.02, "max_lag_s": 0.03})
    other = _ControlStandIn({"ok": False, "error": "what?"})
    clock = iter([10.0, 10.1, 10.2, 10.3])
    try:
        watch = BankLagWatch()
        poller = BankLagPoller(bank.port, watch, "127.0.0.1", clock=lambda: next(clock))
        poller.check()
        assert poller.poll_once()
        assert watch.answers == 2 and watch.lag_s == 0.02 and watch.state_at(10.05) == LAGGED
        for port in (other.port, _free_port()):
            bad = BankLagPoller(port, BankLagWatch(), "127.0.0.1", timeout_s=0.5)
            with pytest.raises(MirrorInputError, match="bank_control_port") as err:
                bad.check()
            assert err.value.value == port and bad.watch.unanswered_polls == 1
    finally:
        bank.close()
        other.close()


def test_the_cli_exits_2_with_one_json_object_when_the_port_is_no_bank(capsys):
    from rob_twin.cli.main import main

    port = _free_port()
    assert main(["mirror", "--bank-control-port", str(port), "--seconds", "1", "--json"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["exit_code"] == 2 and payload["type"] == "MirrorInputError"
    assert "bank_control_port" in payload["error"] and str(port) in payload["error"]
    assert main(["mirror", "--bank-control-port", "0", "--json"]) == 2
    assert "1..65535" in json.loads(capsys.readouterr().out)["error"]


@pytest.mark.parametrize(
    ("lag_s", "words"),
    [(0.012, "bank lag 12.0 ms"), (-0.0036, "bank 3.6 ms ahead"), (None, "bank lag: no answer")],
)
def test_the_status_line_says_a_bank_ahead_of_the_wall_clock_is_ahead_not_a_negative_lag(
    lag_s, words
):
    from rob_twin.twin.bus.mirror_live import status_line

    watch = BankLagWatch()
    if lag_s is not None:
        watch.observe(100.0, lag_s, max(lag_s, 0.0))
    mirror = MirrorTwin({"right": [0.0] * 7}, 100.0, 0.02, lag_gate=LagGate(watch))
    line = status_line(mirror, 1.0, 0.0)
    assert f"{words}, 0 replies left out" in line, line
    assert "lag -" not in line
