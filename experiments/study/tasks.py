"""A study spec expanded into tasks: one (goal pair, margin) each, with its own seeds.

Row ``r`` is margin ``r // count`` and pair ``r % count``. A pair's seeds depend only on
the spec's seed and the pair index (``numpy.random.SeedSequence``), so the same pair is
planned at every margin and any row can be rebuilt and replayed alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rob_twin.experiments.study.spec import (
    GoalFile,
    StudySpec,
    StudySpecError,
    model_path,
    read_goal_file,
)


@dataclass(frozen=True)
class StudyContext:
    """What a worker needs to build its planner (picklable; no model inside)."""

    model: str  # "rob" or an MJCF path
    start: str  # keyframe name
    arms: tuple[str, ...]
    planner: dict
    goal_sampler: dict  # GaussianGoals fields, or {"kind": "file"}


@dataclass(frozen=True)
class Task:
    row: int
    pair: int
    margin_m: float
    goal_seed: int
    plan_seed: int
    goals: dict[str, tuple[float, ...]] | None = None  # given by a goal file, else sampled


def pair_seeds(spec_seed: int, pair: int) -> tuple[int, int]:
    """(goal seed, plan seed) of pair ``pair``: independent of every other pair."""
    goal_seed, plan_seed = np.random.SeedSequence([spec_seed, pair]).generate_state(2)
    return int(goal_seed), int(plan_seed)


def context(spec: StudySpec, base_dir: Path) -> StudyContext:
    return StudyContext(
        model=model_path(spec, base_dir),
        start=spec.start,
        arms=tuple(spec.arms),
        planner=spec.planner.model_dump(),
        goal_sampler=spec.goals.model_dump(),
    )


def expand(spec: StudySpec, base_dir: Path) -> list[Task]:
    """Every task of the study, in row order."""
    pairs = read_goal_file(spec, base_dir) if isinstance(spec.goals, GoalFile) else None
    tasks = []
    for m, margin in enumerate(spec.margins_m):
        for i in range(spec.count):
            goal_seed, plan_seed = pair_seeds(spec.seed, i)
            goals = {a: tuple(float(v) for v in pairs[i][a]) for a in spec.arms} if pairs else None
            tasks.append(
                Task(
                    row=m * spec.count + i,
                    pair=i,
                    margin_m=float(margin),
                    goal_seed=goal_seed,
                    plan_seed=plan_seed,
                    goals=goals,
                )
            )
    return tasks


def task_for_row(spec: StudySpec, base_dir: Path, row: int) -> Task:
    total = spec.count * len(spec.margins_m)
    if not 0 <= row < total:
        raise StudySpecError("--replay", row, f"a row in 0..{total - 1}")
    pairs = read_goal_file(spec, base_dir) if isinstance(spec.goals, GoalFile) else None
    pair = row % spec.count
    goal_seed, plan_seed = pair_seeds(spec.seed, pair)
    goals = {a: tuple(float(v) for v in pairs[pair][a]) for a in spec.arms} if pairs else None
    return Task(
        row=row,
        pair=pair,
        margin_m=float(spec.margins_m[row // spec.count]),
        goal_seed=goal_seed,
        plan_seed=plan_seed,
        goals=goals,
    )
