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
from rob_twin.experiments.registry import benchmark
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


def count_set(group, requests) -> dict:
    """Per-stage mj_collision calls of planning ``requests`` ((start or None, goals, seed))
    from the group's reference state."""
    reference = group.reference_qpos.copy()
    per_plan: list[dict[str, int]] = []
    ok = 0
    counter = _Counter()
    with counter.installed():
        for start, goals, seed in requests:
            group.set_qpos(reference)
            for a, q in (start or {}).items():
                group.set_arm(a, q)
            counter.calls = {}
            r = group.plan(goals, seed=seed)
            ok += bool(r.ok)
            per_plan.append(dict(counter.calls))
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
    return {"requests": len(requests), "success": ok, "mj_collision_calls_per_plan": out}


def check_sets(per_set: int | None = None) -> dict:
    """``count_set`` on the study, hard ROB and hard stand sets (first ``per_set`` of each)."""
    from rob_twin.experiments.bench_stages import _hard_requests, _study_requests
    from rob_twin.experiments.hard_problems import groups
    from rob_twin.models.loading import keyframe_state
    from rob_twin.models.names import group_arms
    from rob_twin.planners.group import ArmGroup

    m, home = keyframe_state()
    study = ArmGroup(m, group_arms())
    study.set_qpos(home)
    out = {"study": count_set(study, _study_requests(study)[:per_set])}
    for name, group in groups().items():
        out[f"hard_{name}"] = count_set(group, _hard_requests(name)[:per_set])
    return out


@benchmark("planner-checks")
def run() -> dict:
    return {**check_sets(), "hardware_io": False, "simulated": True}
