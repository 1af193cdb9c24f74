"""Benchmark: where a plan's collision checks go, stage by stage, per problem set (simulated).

Counts every ``mujoco.mj_collision`` call a ``plan`` makes (state checks of the search and
shortcut, the refine and final check's measured samples, the certificate's queries, goal
checks) by the ``StageTimer`` stage it runs in, for the study set (30 pairs from home), the
frozen hard ROB set and the hard two-arm stand set, plan seed = index. The counter wraps
``mujoco.mj_collision`` for the duration of the run only (a measurement harness: the
planner is unchanged). Figures per set: median, p95 and sum of calls per plan per stage,
and of the total. Units: counts.
"""

from __future__ import annotations

from contextlib import contextmanager

import mujoco
import numpy as np
from rob_twin.experiments.hard_problems import place_start
from rob_twin.experiments.registry import benchmark
from rob_twin.models.names import ROB
from rob_twin.planners import timing


class _Counter:
    """Counts mj_collision calls by the innermost open StageTimer stage (``other`` outside)."""

    def __init__(self):
        self.stage = ["other"]
        self.calls: dict[str, int] = {}

    @contextmanager
    def installed(self):
        real_collision, real_stage = mujoco.mj_collision, timing.StageTimer.stage
        counter = self

        def counted(m, d):
            s = counter.stage[-1]
            counter.calls[s] = counter.calls.get(s, 0) + 1
            return real_collision(m, d)

        @contextmanager
        def stage(timer, name):
            counter.stage.append(name)
            try:
                with real_stage(timer, name):
                    yield
            finally:
                counter.stage.pop()

        mujoco.mj_collision = counted
        timing.StageTimer.stage = stage
        try:
            yield self
        finally:
            mujoco.mj_collision = real_collision
            timing.StageTimer.stage = real_stage


@contextmanager
def next_measurement_sources():
    """Counts what set each next measurement of the final check: the bound of the pairs
    beyond the horizon (its stop; ties count here) or a pair measured within it (earlier),
    from each final check's own count (``FinalCheck.set_by_near``; every measured state but
    the last chose its successor). Wraps the planner's ``final_check`` (the name
    ``rob_twin.planners.refine`` calls) for the duration only (the planner is unchanged)."""
    from rob_twin.planners import refine

    real = refine.final_check
    counts = {"pairs_beyond_horizon": 0, "a_near_pair": 0}

    def counted(*args, **kwargs):
        fc = real(*args, **kwargs)
        if fc.measured > 0:
            counts["a_near_pair"] += fc.set_by_near
            counts["pairs_beyond_horizon"] += fc.measured - 1 - fc.set_by_near
        return fc

    refine.final_check = counted
    try:
        yield counts
    finally:
        refine.final_check = real


def count_set(group, requests) -> dict:
    """Per-stage mj_collision calls of planning ``requests`` ((start or None, goals, seed))
    from the group's reference state, what set the final check's next measurements, and
    the successful plans' median duration [s]."""
    reference = group.reference_qpos.copy()
    per_plan: list[dict[str, int]] = []
    ok = 0
    durations: list[float] = []
    counter = _Counter()
    with counter.installed(), next_measurement_sources() as sources:
        for start, goals, seed in requests:
            place_start(group, reference, start)
            counter.calls = {}
            r = group.plan(goals, seed=seed)
            ok += bool(r.ok)
            per_plan.append(dict(counter.calls))
            if r.ok:
                durations.append(r.plan.duration_s)
    group.set_qpos(reference)
    stages = sorted({s for p in per_plan for s in p})
    out = {}
    for s in [*stages, "total"]:
        v = np.array([sum(p.values()) if s == "total" else p.get(s, 0) for p in per_plan])
        out[s] = {
            "median": float(np.median(v)),
            "p95": float(np.percentile(v, 95)),
            "sum": int(v.sum()),
        }
    return {
        "requests": len(requests),
        "success": ok,
        "path_duration_s_median": round(float(np.median(durations)), 3) if durations else None,
        "mj_collision_calls_per_plan": out,
        "next_measurement_set_by": sources
        | {
            "share_beyond_horizon": round(
                sources["pairs_beyond_horizon"] / max(1, sum(sources.values())), 3
            )
        },
    }


def previous_shortcut(config):
    """``config`` with the shortcut's previous settings (every cut over 2 % checked,
    no redundant-waypoint pass before the random rounds)."""
    from dataclasses import replace

    return replace(
        config,
        search=replace(config.search, shortcut_min_gain=0.02, shortcut_drop_first=False),
    )


def check_sets(per_set: int | None = None, config=None) -> dict:
    """``count_set`` on the study, hard ROB and hard stand sets (first ``per_set`` of each),
    every group with ``config`` (None: the defaults)."""
    from rob_twin.experiments.bench_stages import _hard_requests, _study_requests
    from rob_twin.experiments.hard_problems import STAND_ARMS, STAND_PATH
    from rob_twin.models.loading import keyframe_state
    from rob_twin.models.names import group_arms
    from rob_twin.planners.group import ArmGroup

    m, home = keyframe_state()
    study = ArmGroup(m, group_arms(), config)
    study.set_qpos(home)
    stand = ArmGroup(mujoco.MjModel.from_xml_path(str(STAND_PATH)), STAND_ARMS, config)
    return {
        "study": count_set(study, _study_requests(study)[:per_set]),
        "hard_rob": count_set(study, _hard_requests(ROB)[:per_set]),
        "hard_stand": count_set(stand, _hard_requests("stand")[:per_set]),
    }


@benchmark("planner-checks")
def run() -> dict:
    from rob_twin.planners.group_config import default_config

    return {
        "defaults": check_sets(),
        "previous_shortcut": check_sets(config=previous_shortcut(default_config())),
        "previous_shortcut_is": "the shortcut's min_gain 0.02, no drop-first pass; the rest "
        "as the defaults (the counts are deterministic: seeds fixed)",
        "hardware_io": False,
        "simulated": True,
    }
