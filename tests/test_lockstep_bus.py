"""The lockstep virtual bus delivers like python-can's ``virtual`` bus, queue included.

Its send appends to an unbounded receive queue directly and wakes a receiver only when
one is blocked; these tests hold it to ``Queue.put``'s observable behaviour: order,
copies per receiver, a blocked ``recv(timeout)`` woken at once, bounded queues untouched.
"""

from __future__ import annotations

import threading
import time
import uuid

import can
from rob_twin.twin.bus.wire import LockstepVirtualBus, open_virtual


def _channel() -> str:
    return f"test-lockstep-{uuid.uuid4().hex}"


def _msg(i: int, varied: bool = False) -> can.Message:
    """Frame ``i``; ``varied``: every few frames extended, remote, an error frame or a CAN FD
    frame (with or without bit-rate switch)."""
    remote = varied and i % 5 == 2
    fd = varied and not remote and i % 4 == 0
    return can.Message(
        is_fd=fd,
        bitrate_switch=fd and i % 8 == 0,
        timestamp=0.001 * i,
        arbitration_id=0x11 + i % 7,
        data=None if remote else bytes((0x40, i, 0)),
        dlc=3 if remote else None,
        is_extended_id=varied and i % 3 == 1,
        is_remote_frame=remote,
        is_error_frame=varied and i % 7 == 3,
        is_rx=False,
    )


def test_every_other_bus_gets_its_own_copy_in_order():
    ch = _channel()
    tx, rx1, rx2 = open_virtual(ch), open_virtual(ch), open_virtual(ch)
    try:
        sent = [_msg(i, varied=True) for i in range(20)]
        for m in sent:
            tx.send(m)
        for rx in (rx1, rx2):
            got = [rx.recv(timeout=0) for _ in sent]
            assert [(m.arbitration_id, bytes(m.data), m.timestamp) for m in got] == [
                (m.arbitration_id, bytes(m.data), m.timestamp) for m in sent
            ]
            assert all(m.is_rx and m.channel == ch for m in got)
            # every field python-can's VirtualBus would set on its copy
            fields = (
                "timestamp",
                "arbitration_id",
                "is_extended_id",
                "is_remote_frame",
                "is_error_frame",
                "dlc",
                "is_fd",
                "bitrate_switch",
                "error_state_indicator",
            )
            for m, s in zip(got, sent, strict=True):
                assert [getattr(m, f) for f in fields] == [getattr(s, f) for f in fields]
                assert type(m.data) is bytearray and m.data == s.data
            assert rx.recv(timeout=0) is None
            assert rx.queue.unfinished_tasks == len(sent)  # put()'s accounting kept
        assert got[0] is not sent[0]
        assert tx.recv(timeout=0) is None  # never our own frames
    finally:
        for b in (tx, rx1, rx2):
            b.shutdown()


def test_a_receiver_blocked_in_recv_is_woken_by_a_send():
    ch = _channel()
    tx, rx = open_virtual(ch), open_virtual(ch)
    got: list = []
    waited: list[float] = []

    def receive():
        t0 = time.monotonic()
        got.append(rx.recv(timeout=10.0))
        waited.append(time.monotonic() - t0)

    th = threading.Thread(target=receive)
    th.start()
    try:
        deadline = time.monotonic() + 10.0
        while not rx.queue.not_empty._waiters and time.monotonic() < deadline:  # blocked in wait()
            time.sleep(0.001)
        assert rx.queue.not_empty._waiters, "the receiver never blocked"
        tx.send(_msg(3))
        th.join(10.0)
        assert got and got[0] is not None and bytes(got[0].data) == bytes((0x40, 3, 0))
        assert waited[0] < 5.0  # woken by the send, not released by its 10 s timeout
    finally:
        th.join(10.0)
        tx.shutdown()
        rx.shutdown()


def test_a_bounded_queue_still_goes_through_put():
    ch = _channel()
    tx = open_virtual(ch)
    rx = LockstepVirtualBus(
        channel=ch, receive_own_messages=False, preserve_timestamps=True, rx_queue_size=1
    )
    try:
        tx.send(_msg(1))
        try:
            tx.send(_msg(2), timeout=0.01)
        except can.CanOperationError:
            pass
        else:
            raise AssertionError("a full bounded queue must refuse, as VirtualBus does")
        assert bytes(rx.recv(timeout=0).data) == bytes((0x40, 1, 0))
    finally:
        tx.shutdown()
        rx.shutdown()
