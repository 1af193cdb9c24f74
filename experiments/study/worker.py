"""Run one study task: build (once per process) the model and one ArmGroup per margin,
sample the task's goal pair from its seed, plan, and return the result row.

A task that raises becomes a row with status ``error``, its error and its seeds; it never
stops the study. Rows hold plain values only (CSV-ready). Units: radians, metres, seconds.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import mujoco
import numpy as np
from rob_twin.experiments.goal_pairs import goal_pairs
from rob_twin.experiments.study.tasks import StudyContext, Task
from rob_twin.models.loading import apply_keyframe, model_arm_joints
from rob_twin.models.robot_model import load_model_of
from rob_twin.planners.collision import CollisionConfig
from rob_twin.planners.group import ArmGroup, GroupConfig
from rob_twin.planners.search import SearchConfig

# Per process: model path -> (model, start qpos); (context, margin) -> ArmGroup.
_MODELS: dict[tuple[str, str], tuple[mujoco.MjModel, np.ndarray]] = {}
_GROUPS: dict[tuple[str, float], ArmGroup] = {}
_DATA: dict[int, mujoco.MjData] = {}
BUILDS = {"models": 0, "groups": 0}

# Columns whose values depend on the machine, not on the task (left out of replay checks).
TIMING_COLUMNS = ("plan_time_s", "task_time_s", "worker")
COLUMNS = (
    "row",
    "pair",
    "margin_m",
    "goal_seed",
    "plan_seed",
    "status",
    "reason",
    "error",
    "plan_time_s",
    "task_time_s",
    "duration_s",
    "min_clearance_m",
    "repairs",
    "right_tcp_x",
    "right_tcp_y",
    "right_tcp_z",
    "left_tcp_x",
    "left_tcp_y",
    "left_tcp_z",
    "goals",
    "worker",
)


def group_config(ctx: StudyContext, margin_m: float) -> GroupConfig:
    p = ctx.planner
    search = SearchConfig(
        edge_step_rad=p["edge_step_rad"],
        extend_step_rad=p["extend_step_rad"],
        max_iterations=p["max_iterations"],
        shortcut_rounds=p["shortcut_rounds"],
    )
    return GroupConfig(
        collision=CollisionConfig(margin_m=margin_m, horizon_m=margin_m),
        clearance_horizon_m=max(p["clearance_horizon_m"], margin_m),
        search=search,
        max_repairs=p["max_repairs"],
        search_padding_m=p["search_padding_m"],
        substeps=p["substeps"],
    )


def _model(ctx: StudyContext) -> tuple[mujoco.MjModel, np.ndarray]:
    key = (ctx.model, ctx.start)
    if key not in _MODELS:
        model = load_model_of(ctx.model)
        data = mujoco.MjData(model)
        apply_keyframe(model, data, ctx.start)
        _MODELS[key] = (model, data.qpos.copy())
        BUILDS["models"] += 1
    return _MODELS[key]


def group_for(ctx: StudyContext, margin_m: float) -> ArmGroup:
    """This process's ArmGroup for ``margin_m`` (built on first use, then reused), reset to
    the start state."""
    model, start = _model(ctx)
    key = (json.dumps(dataclasses.asdict(ctx), sort_keys=True), margin_m)
    if key not in _GROUPS:
        _GROUPS[key] = ArmGroup(
            model,
            {a: list(model_arm_joints(model, a)) for a in ctx.arms},
            group_config(ctx, margin_m),
        )
        BUILDS["groups"] += 1
    group = _GROUPS[key]
    group.set_qpos(start)
    return group


def sampler_group(ctx: StudyContext) -> ArmGroup:
    """The group goals are sampled with: its checker measures clearance up to the sampler's
    ``min_clearance_m`` (a planning group with a smaller margin could not), and it is the
    same at every margin, so a pair's goals do not depend on the margin."""
    return group_for(ctx, float(ctx.goal_sampler.get("min_clearance_m", 0.0)))


def task_goals(ctx: StudyContext, task: Task) -> dict[str, np.ndarray]:
    if task.goals is not None:
        return {a: np.asarray(q, float) for a, q in task.goals.items()}
    g = ctx.goal_sampler
    return goal_pairs(
        sampler_group(ctx),
        1,
        np.random.default_rng(task.goal_seed),
        sigma_rad=g["sigma_rad"],
        min_clearance_m=g["min_clearance_m"],
    )[0]


def tcp_positions(group: ArmGroup, goals: dict[str, np.ndarray]) -> dict[str, float]:
    """World TCP positions [m] of the goal pair (sites ``<arm>/tcp``), for the failure map."""
    model = group.model
    data = _DATA.setdefault(id(model), mujoco.MjData(model))
    data.qpos[:] = group.reference_qpos
    for arm, q in goals.items():
        joints = model_arm_joints(model, arm)
        ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joints]
        data.qpos[model.jnt_qposadr[ids]] = q
    mujoco.mj_kinematics(model, data)
    out = {}
    for arm in ("right", "left"):
        sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, f"{arm}/tcp")
        for k, axis in enumerate("xyz"):
            out[f"{arm}_tcp_{axis}"] = (
                round(float(data.site_xpos[sid, k]), 6) if arm in goals and sid >= 0 else None
            )
    return out


def task_row(task: Task, **fields) -> dict:
    """A result row of ``task``: every column None but the task's own (row, pair, margin,
    seeds), then ``fields``."""
    row: dict = {c: None for c in COLUMNS}
    row.update(
        row=task.row,
        pair=task.pair,
        margin_m=task.margin_m,
        goal_seed=task.goal_seed,
        plan_seed=task.plan_seed,
        **fields,
    )
    return row


def run_task(ctx: StudyContext, task: Task) -> dict:
    """The result row of ``task`` (never raises for the task's own failures)."""
    t0 = time.perf_counter()
    row = task_row(task, reason="", error="", worker=os.getpid())
    try:
        goals = task_goals(ctx, task)
        group = group_for(ctx, task.margin_m)
        row["goals"] = json.dumps({a: [float(v) for v in q] for a, q in goals.items()})
        row.update(tcp_positions(group, goals))
        tp = time.perf_counter()
        result = group.plan(goals, seed=task.plan_seed)
        row["plan_time_s"] = round(time.perf_counter() - tp, 6)
        row["status"] = result.status.value
        row["reason"] = result.reason[:300]
        if result.ok:
            plan = result.plan
            row.update(
                duration_s=round(plan.duration_s, 6),
                min_clearance_m=round(float(plan.min_clearance.distance_m), 6),
                repairs=int(plan.repairs),
            )
    except Exception as err:  # a failed row, never a failed study
        row["status"] = "error"
        row["error"] = f"{type(err).__name__}: {err}"
    row["task_time_s"] = round(time.perf_counter() - t0, 6)
    return row
