"""Goals of one arm: a joint goal, a set of candidate joint goals, or a resolver.

``ArmGroup.plan`` takes ``{arm: goal}``. A goal is turned into a list of candidate joint
vectors (in preference order) for that arm; the group then combines the candidates of
all moving arms and keeps the first combination that passes the combined collision
check. Pose goals plug in as *resolvers*: any object with a method
``joint_candidates(group, arm, start) -> Sequence[array]`` (e.g. IK solutions of a TCP
pose, best first) is accepted as a goal. A resolver that also has
``more_candidates(group, arm, start, have) -> Sequence[array]`` is a *resampling* goal:
when no combination of the candidates so far passes the combined check, the group asks
it for more (new IK solutions) instead of failing. A resolver that finds no candidate at
all raises ``GoalUnreachableError`` (the plan then fails with GOAL_UNREACHABLE).

A resolver that also has ``candidate_stream(group, arm, start) -> Iterator[array]`` is a
*streaming* goal: the group takes its candidates one at a time, the first at once and
each further one only when no combination of those so far passes the combined check (an
IK solution costs far more than a check, and the first pair is usually free). The
stream raises ``GoalUnreachableError`` on its first item when there is no candidate.

Units: radians.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
from rob_twin.planners.errors import (
    GoalInputError,
    GoalUnreachableError,  # noqa: F401  (re-exported)
)

if TYPE_CHECKING:
    from rob_twin.planners.group import ArmGroup


@dataclass(frozen=True)
class JointGoal:
    """Joint positions [rad] of one arm, in the arm's joint order."""

    positions: tuple[float, ...]

    def __init__(self, positions: Sequence[float] | np.ndarray):
        """GoalInputError for anything but real numbers (a str is never parsed, a bool is
        not a radian, a complex value is not cast)."""
        if isinstance(positions, (list, tuple)) and any(
            isinstance(x, (bool, np.bool_)) for x in positions
        ):
            raise GoalInputError(
                "*", "JointGoal positions", positions, "real numbers [rad] (not bools)"
            )
        try:
            raw = np.asarray(positions)
        except (TypeError, ValueError):
            raise GoalInputError(
                "*", "JointGoal positions", positions, "real numbers [rad]"
            ) from None
        if raw.dtype.kind not in "iuf":
            raise GoalInputError(
                "*", "JointGoal positions", positions, f"real numbers [rad] (got dtype {raw.dtype})"
            )
        object.__setattr__(self, "positions", tuple(float(x) for x in raw.ravel()))


@dataclass(frozen=True)
class JointGoalSet:
    """Several acceptable joint goals of one arm, best first (e.g. IK candidates)."""

    candidates: tuple[JointGoal, ...]

    def __init__(self, candidates: Sequence[JointGoal | Sequence[float] | np.ndarray]):
        object.__setattr__(
            self,
            "candidates",
            tuple(c if isinstance(c, JointGoal) else JointGoal(c) for c in candidates),
        )


@runtime_checkable
class GoalResolver(Protocol):
    """A goal that yields candidate joint vectors for ``arm`` (pose goals via IK)."""

    def joint_candidates(
        self, group: ArmGroup, arm: str, start: np.ndarray
    ) -> Sequence[np.ndarray]: ...


@runtime_checkable
class ResamplingGoal(GoalResolver, Protocol):
    """A resolver that can produce further candidates, distinct from ``have``."""

    def more_candidates(
        self, group: ArmGroup, arm: str, start: np.ndarray, have: Sequence[np.ndarray]
    ) -> Sequence[np.ndarray]: ...


@runtime_checkable
class StreamingGoal(GoalResolver, Protocol):
    """A resolver whose candidates the group can take one at a time, best first."""

    def candidate_stream(
        self, group: ArmGroup, arm: str, start: np.ndarray
    ) -> Iterator[np.ndarray]: ...


Goal = JointGoal | JointGoalSet | GoalResolver | Sequence[float] | np.ndarray


def raw_candidates(goal: Goal, group: ArmGroup, arm: str, start: np.ndarray) -> list[np.ndarray]:
    """The unvalidated candidate vectors of ``goal`` for ``arm``."""
    if isinstance(goal, np.ndarray):
        return [goal]
    if isinstance(goal, JointGoal):
        return [np.array(goal.positions)]
    if isinstance(goal, JointGoalSet):
        return [np.array(c.positions) for c in goal.candidates]
    # plain vectors and resolver candidates are typed and shaped by the group's validation
    if isinstance(goal, GoalResolver):
        return list(goal.joint_candidates(group, arm, start))
    return [goal]


def candidate_source(
    goal: Goal, group: ArmGroup, arm: str, start: np.ndarray
) -> tuple[list[np.ndarray], Iterator[np.ndarray] | None]:
    """(the unvalidated candidates to try first, the stream of further ones or None).

    A streaming goal gives its first candidate and the rest of its stream; any other goal
    gives all of its candidates at once and no stream."""
    if isinstance(goal, np.ndarray | JointGoal):  # the usual goals: no Protocol check
        return raw_candidates(goal, group, arm, start), None
    if isinstance(goal, StreamingGoal):
        stream = iter(goal.candidate_stream(group, arm, start))
        first = next(stream, None)
        return ([] if first is None else [first]), stream
    return raw_candidates(goal, group, arm, start), None
