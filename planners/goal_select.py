"""Goal selection of ``ArmGroup.plan``: resolve each arm's goal into candidate joint vectors
and pick the first combination that is free at the margin.

Lazy candidates: a streaming goal (``rob_twin.planners.goals.StreamingGoal``, e.g.
``PoseGoal``: one IK solve per candidate) gives one candidate at first; only when no
combination of the candidates so far passes the combined check does each streaming arm give
its next one (in arm order), so a free first pair costs one IK solution per arm.

Resampling: when no combination passes the combined check (streams spent), goals that can
resample (``rob_twin.planners.goals.ResamplingGoal``, e.g. ``PoseGoal``) are asked for more
candidates, up to ``GroupConfig.max_goal_resamples`` rounds, before GOAL_IN_COLLISION.

Units: radians, metres.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np
from rob_twin.planners.collision import CheckSession, Clearance
from rob_twin.planners.errors import GoalInputError, GoalUnreachableError
from rob_twin.planners.goals import Goal, ResamplingGoal, candidate_source
from rob_twin.planners.plan import PlanResult, PlanStatus
from rob_twin.planners.timing import StageTimer

if TYPE_CHECKING:
    from rob_twin.planners.group import ArmGroup

Candidates = dict[str, list[np.ndarray]]
Streams = dict[str, Iterator[np.ndarray] | None]


def first_candidates(group: ArmGroup, arm: str, goal: Goal):
    """(validated first candidates, stream of further raw ones or None) of ``goal``."""
    raw, stream = candidate_source(goal, group, arm, group.arm_q(arm))
    if not raw:
        raise GoalInputError(arm, "goal", goal, "at least one candidate joint vector")
    return [group._validated(arm, c, "goal") for c in raw], stream


def resolve_candidates(
    group: ArmGroup, moving, goals: Mapping[str, Goal], timer: StageTimer
) -> tuple[Candidates, Streams] | PlanResult:
    """Each moving arm's first candidates and stream (stage ``goals``), or a
    GOAL_UNREACHABLE result when a goal resolver raised GoalUnreachableError."""
    unreachable = None
    with timer.stage("goals"):
        try:
            candidates = {a: first_candidates(group, a, goals[a]) for a in moving}
            streams = {a: candidates[a][1] for a in moving}
            candidates = {a: candidates[a][0] for a in moving}
        except GoalUnreachableError as err:
            unreachable = err
    if unreachable is not None:
        return PlanResult(
            PlanStatus.GOAL_UNREACHABLE, reason=str(unreachable), stage_times_s=timer.stages
        )
    return candidates, streams


def pick_goal(
    group: ArmGroup,
    moving,
    goals,
    candidates,
    meter: CheckSession,
    deadline: float | None = None,
    streams: Mapping | None = None,
):
    """First combination of candidates (in preference order) that is free; when none
    is, each arm with a stream (``streams``: arm -> iterator or None) adds its next
    candidate, and once every stream is spent resampling goals are asked for more
    candidates (``max_goal_resamples`` rounds). Returns (goal or None, failure or
    None, resample rounds used); (None, None, n) when ``deadline``
    (``time.perf_counter()``) passed first."""
    config = group.config
    first: Clearance | None = None
    lists = {a: list(candidates[a]) for a in moving}
    live = {a: s for a, s in (streams or {}).items() if s is not None}
    tried: set[tuple[int, ...]] = set()
    margin = config.collision.margin_m
    resamples = 0
    while True:
        for combo in itertools.product(*(range(len(lists[a])) for a in moving)):
            if combo in tried or len(tried) >= config.max_goal_combinations:
                continue
            if deadline is not None and time.perf_counter() > deadline:
                return None, None, resamples
            tried.add(combo)
            q = np.concatenate([lists[a][k] for a, k in zip(moving, combo, strict=True)])
            c = meter.clearance(q)
            if c.is_free(margin):
                return q, None, resamples
            first = first or c
        if len(tried) >= config.max_goal_combinations:
            break
        if grow_from_streams(group, moving, lists, live):
            continue
        if resamples >= config.max_goal_resamples:
            break
        grew = False
        for a in moving:
            if isinstance(goals[a], ResamplingGoal):
                more = goals[a].more_candidates(group, a, group.arm_q(a), list(lists[a]))
                lists[a].extend(group._validated(a, c, "goal") for c in more)
                grew = grew or len(more) > 0
        if not grew:
            break
        resamples += 1
    n = len(tried)
    return (
        None,
        PlanResult(
            PlanStatus.GOAL_IN_COLLISION,
            reason=(
                f"{'every' if n > 1 else 'the'} goal combination ({n} tried, "
                f"{resamples} resample rounds) is within {margin * 1e3:.1f} mm of "
                f"collision; first: {first.pair} at "
                f"{first.distance_m * 1e3:.1f} mm"
            ),
            pair=first.pair,
        ),
        resamples,
    )


def grow_from_streams(group: ArmGroup, moving, lists, live) -> bool:
    """Append each live stream's next candidate (validated) to its arm's list; drop
    spent streams. True when any list grew."""
    grew = False
    for a in moving:
        if a not in live:
            continue
        nxt = next(live[a], None)
        if nxt is None:
            del live[a]
        else:
            lists[a].append(group._validated(a, nxt, "goal"))
            grew = True
    return grew
