"""Latest-target mailbox: replacement, sequence/generation checks, accounting (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.controllers.mailbox import LatestTargetMailbox, RejectReason
from rob_twin.controllers.target import ArmTarget
from rob_twin.models.names import Arm


def _t(seq: int, gen: int = 1) -> ArmTarget:
    return ArmTarget(
        arm=Arm.RIGHT,
        positions_rad=np.full(7, 0.01 * seq),
        sequence=seq,
        generation=gen,
        lease=None,
    )


def test_replace_take_and_close():
    mb = LatestTargetMailbox()
    assert mb.offer(_t(1)).accepted
    r = mb.offer(_t(2))
    assert r.accepted and r.replaced
    assert mb.take().sequence == 2 and mb.take() is None
    assert mb.offer(_t(3)).accepted
    assert mb.close() == 1
    assert mb.offer(_t(4)).reason is RejectReason.CLOSED
    mb.open(2)
    assert mb.offer(_t(1, gen=1)).reason is RejectReason.FOREIGN_GENERATION
    assert mb.offer(_t(1, gen=2)).accepted  # sequence restarts with the generation
    c = mb.counts()
    assert (c.submitted, c.accepted, c.replaced, c.taken, c.discarded, c.pending) == (
        6,
        4,
        1,
        1,
        1,
        1,
    )
    assert c.balanced


def test_precheck_reason_is_counted():
    mb = LatestTargetMailbox()
    r = mb.offer(_t(1), RejectReason.LEASE_EXPIRED)
    assert not r.accepted and mb.counts().rejected_by_reason == {"lease_expired": 1}
    assert mb.offer(_t(1)).accepted  # a rejected target does not consume its sequence


ops = st.lists(
    st.one_of(
        st.tuples(st.just("offer"), st.integers(0, 30), st.integers(1, 3)),
        st.tuples(st.just("take"), st.just(0), st.just(0)),
        st.tuples(st.just("close"), st.just(0), st.just(0)),
        st.tuples(st.just("open"), st.just(0), st.integers(1, 3)),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_accounting_identity_holds_for_any_history(history):
    mb = LatestTargetMailbox()
    last_seq = {}
    gen = 1
    for op, seq, g in history:
        if op == "offer":
            r = mb.offer(_t(seq, g))
            if r.accepted:
                assert g == gen and seq > last_seq.get(gen, -1)
                last_seq[gen] = seq
        elif op == "take":
            mb.take()
        elif op == "close":
            mb.close()
        else:
            mb.open(g)
            gen = g
            last_seq.pop(g, None)
        assert mb.counts().balanced
