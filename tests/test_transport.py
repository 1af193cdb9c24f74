"""CAN transport boundary over python-can virtual buses (one unique channel per test)."""

from __future__ import annotations

import math
import uuid

import can
import numpy as np
import pytest
from rob_twin.controllers.codec import decode_command, encode_feedback
from rob_twin.controllers.errors import TransportClosedError, TransportConfigError
from rob_twin.controllers.publish import PublishOutcome, SamplePublisher
from rob_twin.controllers.transport import CanTransport, TransportConfig, default_config
from rob_twin.models.names import BUS_MAPPING, COMMAND_IDS, FEEDBACK_IDS, Arm

SAMPLE = np.array([0.1, -0.2, 0.3, 0.4, -0.5, 0.6, -0.7])


class FakeClock:
    def __init__(self, t: float = 100.0, step: float = 0.0):
        self.t, self.step = t, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


@pytest.fixture
def channel() -> str:
    return f"test-{uuid.uuid4().hex}"


@pytest.fixture
def pair(channel):
    """A transport on ``channel`` and a peer bus standing for the drives / other writers."""
    clock = FakeClock()
    tr = CanTransport(TransportConfig(channel=channel), clock=clock)
    peer = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
    yield tr, peer, clock
    tr.close()
    peer.shutdown()


def drain(bus: can.BusABC) -> list[can.Message]:
    out = []
    while (m := bus.recv(timeout=0)) is not None:
        out.append(m)
    return out


class FailingBus:
    """A bus whose ``send`` raises ``exc`` on frame ``k`` (0-based); records every call."""

    def __init__(self, k: int, exc: BaseException):
        self.k, self.exc, self.sent = k, exc, []

    def send(self, msg, timeout=None):
        if len(self.sent) == self.k:
            self.sent.append(None)
            raise self.exc
        self.sent.append(msg)

    def recv(self, timeout=None):
        return None

    def shutdown(self):  # pragma: no cover - never called: the transport does not own it
        raise AssertionError("transport shut down a bus it did not open")


# ---------------------------------------------------------------------- publishing


def test_publish_sends_seven_frames_in_order(pair):
    tr, peer, _ = pair
    publisher: SamplePublisher = tr  # structural: the owner's view of the transport
    report = publisher.publish_sample(SAMPLE)
    assert report.ok
    drain(peer)
    report = tr.publish_sample(SAMPLE)
    assert report.outcome is PublishOutcome.ACCEPTED and report.ok
    assert report.accepted_joints == tuple(range(1, 8)) and report.frames_sent == 7
    msgs = drain(peer)
    assert [m.arbitration_id for m in msgs] == list(COMMAND_IDS)
    for j, m in enumerate(msgs, start=1):
        d = decode_command(m.arbitration_id, m.data)
        assert d.joint == j and abs(d.position_rad - SAMPLE[j - 1]) < 0.00014
        assert not m.is_extended_id and len(m.data) == 3
    assert tr.counters.accepted == 2 and tr.counters.frames_sent == 14


def test_encode_error_is_refused_and_nothing_is_sent(pair):
    tr, peer, _ = pair
    bad = SAMPLE.copy()
    bad[6] = math.nan
    report = tr.publish_sample(bad)
    assert report.outcome is PublishOutcome.REFUSED and report.accepted_joints == ()
    assert "joint 7" in report.reason and report.extra["error"] == "NonFiniteValueError"
    assert drain(peer) == []
    report = tr.publish_sample(np.zeros(6))
    assert report.outcome is PublishOutcome.REFUSED and "shape" in report.reason
    assert tr.counters.refused == 2 and tr.counters.encode_errors == 2


@pytest.mark.parametrize(
    ("k", "exc", "outcome", "accepted"),
    [
        (0, can.CanOperationError("ENOBUFS"), PublishOutcome.REFUSED, ()),
        (3, can.CanOperationError("ENOBUFS"), PublishOutcome.PARTIAL, (1, 2, 3)),
        (6, can.CanError("bus off"), PublishOutcome.PARTIAL, (1, 2, 3, 4, 5, 6)),
        (2, can.CanTimeoutError("tx timeout"), PublishOutcome.UNCERTAIN, (1, 2)),
        (0, can.CanTimeoutError("tx timeout"), PublishOutcome.UNCERTAIN, ()),
        (4, TimeoutError("adapter"), PublishOutcome.UNCERTAIN, (1, 2, 3, 4)),
        (0, RuntimeError("wrapper bug"), PublishOutcome.UNCERTAIN, ()),
    ],
)
def test_send_failures_map_to_outcomes_and_never_retry(k, exc, outcome, accepted):
    bus = FailingBus(k, exc)
    tr = CanTransport(bus=bus, clock=FakeClock())
    report = tr.publish_sample(SAMPLE)
    assert report.outcome is outcome
    assert report.accepted_joints == accepted and report.frames_sent == len(accepted)
    assert f"joint {k + 1}" in report.reason
    assert len(bus.sent) == k + 1  # stopped at the failing frame, no retry
    assert [m.arbitration_id for m in bus.sent[:k]] == list(COMMAND_IDS[:k])
    tr.close()  # must not shut down the injected bus


def test_deadline_miss_is_uncertain_but_batch_is_whole(channel):
    clock = FakeClock(step=0.002)  # every clock read advances 2 ms: batch ~4 ms > 1 ms
    cfg = TransportConfig(channel=channel, publish_deadline_s=0.001)
    with (
        can.Bus(interface="virtual", channel=channel) as peer,
        CanTransport(cfg, clock=clock) as tr,
    ):
        report = tr.publish_sample(SAMPLE)
        assert report.outcome is PublishOutcome.UNCERTAIN
        assert report.extra["deadline_missed"] and "deadline" in report.reason
        assert report.accepted_joints == tuple(range(1, 8))
        assert len(drain(peer)) == 7
        assert tr.counters.deadline_misses == 1 and tr.counters.uncertain == 1


def test_deadline_miss_can_be_reported_as_accepted(channel):
    cfg = TransportConfig(channel=channel, publish_deadline_s=0.001, late_is_uncertain=False)
    with CanTransport(cfg, clock=FakeClock(step=0.002)) as tr:
        report = tr.publish_sample(SAMPLE)
        assert report.outcome is PublishOutcome.ACCEPTED and report.extra["deadline_missed"]
        assert tr.counters.deadline_misses == 1


def test_on_time_batch_duration_uses_injected_clock(pair):
    tr, _, clock = pair
    report = tr.publish_sample(SAMPLE)
    assert report.duration_s == 0.0 and report.extra["deadline_missed"] is False


# ------------------------------------------------------------------------ feedback


def test_poll_feedback_records_latest_and_receive_times(pair):
    tr, peer, clock = pair
    assert tr.feedback_age(1) == math.inf
    for j in (1, 2, 3):
        f = encode_feedback(j, 0.1 * j, current=0.5, status=j)
        peer.send(can.Message(arbitration_id=f.arbitration_id, data=f.data, is_extended_id=False))
    assert tr.poll_feedback() == 3
    assert tr.poll_feedback() == 0  # non-blocking when nothing is waiting
    assert set(tr.latest_feedback) == {1, 2, 3}
    assert tr.latest_feedback[2].position_rad == pytest.approx(0.2, abs=0.00014)
    assert tr.latest_feedback[3].status == 3
    assert tr.feedback_received_at[1] == 100.0
    clock.t = 100.25
    f = encode_feedback(1, -0.3)
    peer.send(can.Message(arbitration_id=f.arbitration_id, data=f.data, is_extended_id=False))
    tr.poll_feedback()
    assert tr.feedback_received_at[1] == 100.25
    assert tr.latest_feedback[1].position_rad == pytest.approx(-0.3, abs=0.00014)
    clock.t = 100.5
    ages = tr.feedback_ages()
    assert ages[0] == pytest.approx(0.25) and ages[1] == pytest.approx(0.5)
    assert np.all(np.isinf(ages[3:]))
    assert tr.counters.feedback_frames == 4


def test_poll_feedback_respects_max_frames(pair):
    tr, peer, _ = pair
    for _ in range(5):
        peer.send(can.Message(arbitration_id=FEEDBACK_IDS[0], data=bytes(8), is_extended_id=False))
    assert tr.poll_feedback(max_frames=2) == 2
    assert tr.poll_feedback() == 3


def test_malformed_and_unknown_frames_are_counted_not_raised(pair):
    tr, peer, _ = pair
    peer.send(can.Message(arbitration_id=0x94, data=bytes(5), is_extended_id=False))
    peer.send(can.Message(arbitration_id=0x200, data=bytes(8), is_extended_id=False))
    peer.send(can.Message(arbitration_id=0x91, data=bytes(8), is_extended_id=True))
    assert tr.poll_feedback() == 3
    assert tr.counters.feedback_errors == 1 and "5 data bytes" in tr.last_feedback_error
    assert tr.counters.other_frames == 2
    assert tr.latest_feedback == {} and tr.feedback_received_at == {}


def test_second_writer_is_detected(pair):
    tr, peer, clock = pair
    tr.publish_sample(SAMPLE)
    assert tr.poll_feedback() == 0  # our own frames never come back
    assert tr.counters.foreign_command_frames == 0
    clock.t = 101.0
    peer.send(can.Message(arbitration_id=0x14, data=b"\x40\x00\x80", is_extended_id=False))
    peer.send(can.Message(arbitration_id=0x15, data=b"\x99", is_extended_id=False))
    tr.poll_feedback()
    assert tr.counters.foreign_command_frames == 2
    last = tr.last_foreign_frame
    assert last.arbitration_id == 0x15 and last.decoded is None and last.received_at == 101.0
    tr.handle_message(can.Message(arbitration_id=0x14, data=b"\x40\x00\x80", is_extended_id=False))
    assert tr.last_foreign_frame.decoded.joint == 4 and tr.last_foreign_frame.decoded.count == 128


def test_two_transports_on_one_bus_see_each_other_as_second_writers(channel):
    with (
        CanTransport(TransportConfig(channel=channel)) as a,
        CanTransport(TransportConfig(channel=channel)) as b,
    ):
        a.publish_sample(SAMPLE)
        b.poll_feedback()
        a.poll_feedback()
        assert b.counters.foreign_command_frames == 7
        assert a.counters.foreign_command_frames == 0


# ------------------------------------------------------------------ logging, config


@pytest.mark.parametrize("suffix", [".log", ".asc"])
def test_traffic_log_has_sent_and_received_frames(channel, tmp_path, suffix):
    path = tmp_path / f"traffic{suffix}"
    cfg = TransportConfig(channel=channel, log_path=path)
    with can.Bus(interface="virtual", channel=channel) as peer:
        with CanTransport(cfg) as tr:
            tr.publish_sample(SAMPLE)
            f = encode_feedback(5, 0.25)
            peer.send(
                can.Message(arbitration_id=f.arbitration_id, data=f.data, is_extended_id=False)
            )
            assert tr.poll_feedback() == 1
        logged = list(can.LogReader(str(path)))
    ids = [m.arbitration_id for m in logged]
    assert ids == list(COMMAND_IDS) + [FEEDBACK_IDS[4]]
    assert bytes(logged[-1].data) == f.data
    assert bytes(logged[0].data) == b"\x40" + bytes(logged[0].data[1:])
    if suffix == ".asc":  # ASC keeps the direction
        assert [m.is_rx for m in logged] == [False] * 7 + [True]


def test_default_channel_comes_from_bus_mapping():
    assert default_config().resolved_channel == BUS_MAPPING[Arm.RIGHT].channel == "CAN10"
    assert default_config("left").resolved_channel == BUS_MAPPING[Arm.LEFT].channel == "CAN11"
    assert TransportConfig(arm=Arm.LEFT, channel="x").resolved_channel == "x"
    assert default_config().interface == "virtual"


def test_bad_config_rejected():
    with pytest.raises(TransportConfigError):
        TransportConfig(publish_deadline_s=0)
    with pytest.raises(TransportConfigError):
        TransportConfig(send_timeout_s=-1)


def test_closed_transport_refuses_use(channel):
    tr = CanTransport(TransportConfig(channel=channel))
    tr.close()
    tr.close()  # idempotent
    with pytest.raises(TransportClosedError):
        tr.publish_sample(SAMPLE)
    with pytest.raises(TransportClosedError):
        tr.poll_feedback()
