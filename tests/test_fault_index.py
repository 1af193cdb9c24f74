"""The fault schedule's time index answers exactly what a scan of the whole list would,
for any faults and any order of queries."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.models.names import Arm
from rob_twin.twin.sim.faults import FaultKind, FaultSchedule, FaultSpec

KINDS = [FaultKind.DROP, FaultKind.STALL, FaultKind.BUS_OFF]


def _scan(specs: list[FaultSpec], kind: FaultKind, arm: Arm, t: float) -> tuple[FaultSpec, ...]:
    return tuple(s for s in specs if s.kind is kind and s.arm is arm and s.active(t))


times = st.floats(0.0, 2.0, allow_nan=False).map(lambda x: round(x, 3))
specs = st.builds(
    FaultSpec,
    kind=st.sampled_from(KINDS),
    arm=st.sampled_from(list(Arm)),
    at=times,
    duration=st.one_of(st.just(math.inf), st.floats(0.001, 1.0).map(lambda x: round(x, 3))),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(specs, max_size=30), st.lists(times, min_size=1, max_size=40), st.booleans())
def test_index_matches_a_full_scan(faults, queries, monotone):
    schedule = FaultSchedule(faults)
    for t in sorted(queries) if monotone else queries:
        for kind in KINDS:
            for arm in Arm:
                assert schedule.active(kind, arm, t) == _scan(faults, kind, arm, t)
                first = schedule.first(kind, arm, t)
                assert first is (_scan(faults, kind, arm, t) or (None,))[0]


def test_add_and_clear_rebuild_the_index():
    schedule = FaultSchedule([FaultSpec("drop", "left", at=0.0, duration=1.0)])
    assert len(schedule.active(FaultKind.DROP, Arm.LEFT, 0.5)) == 1
    late = schedule.add(FaultSpec("drop", "left", at=0.2))
    assert schedule.active(FaultKind.DROP, Arm.LEFT, 0.5)[1] is late
    schedule.clear(FaultKind.DROP, Arm.LEFT)
    assert schedule.active(FaultKind.DROP, Arm.LEFT, 0.6) == () and not schedule
