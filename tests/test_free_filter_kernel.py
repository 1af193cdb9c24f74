"""The compiled kernel of the free-space filter (``rob_twin.planners.free_filter_kernel``)
gives the numpy path's answers, and the joint-space distance tables (``_tables``) are lower
bounds of MuJoCo's distance (simulated models: ROB and a generated robot, seeded states)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import mujoco
import numpy as np
import pytest
from rob_twin.experiments import robot_factory as F
from rob_twin.models.loading import keyframe_state
from rob_twin.models.names import group_arms
from rob_twin.models.robot_model import load_robot_model
from rob_twin.planners.collision import CollisionChecker
from rob_twin.planners.free_filter import FreeSpaceFilter
from rob_twin.planners.group import ArmGroup

pytest.importorskip("numba")

STATES = 3000


def _rob() -> ArmGroup:
    m, home = keyframe_state()
    group = ArmGroup(m, group_arms())
    group.set_qpos(home)
    return group


def _generated(tmp_path) -> ArmGroup:
    robot = F.generate_robot(tmp_path / "gen", 3)
    m = load_robot_model(robot.robot_file)
    group = ArmGroup(m, robot.canonical_joints)
    group.set_qpos(m.key("home").qpos)
    return group


@pytest.fixture(params=["rob", "generated"])
def group(request, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _rob() if request.param == "rob" else _generated(tmp_path)


def _session(group: ArmGroup, margin: float):
    cfg = replace(group.checker.config, margin_m=margin, horizon_m=margin)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checker = CollisionChecker(group.model, group.checker.arm_joints, cfg)
    s = checker.session(group.arm_names, group.reference_qpos)
    return s, checker.free_filter(s)


def _states(group: ArmGroup, n: int, seed: int, spread: float = 0.0) -> np.ndarray:
    lo = np.concatenate([group.joint_limits(a)[0] for a in group.arm_names])
    hi = np.concatenate([group.joint_limits(a)[1] for a in group.arm_names])
    # a little beyond the limits too: the tables' ranges end there
    pad = spread * (hi - lo)
    return np.random.default_rng(seed).uniform(lo - pad, hi + pad, (n, lo.size))


def test_the_kernel_proves_what_the_numpy_path_proves(group):
    for margin in (0.0, 0.005):
        s, flt = _session(group, margin)
        assert isinstance(flt, FreeSpaceFilter) and flt.kernel is not None
        qs = _states(group, STATES, 11, spread=0.05)
        reference = flt.proven_free_numpy(qs)
        assert 0.1 < reference.mean() < 0.95  # both answers occur
        assert np.array_equal(flt.kernel(qs), reference)
        # batches of any size, one state included, and the session's entry point
        assert np.array_equal(
            np.concatenate([flt.kernel(qs[k : k + 7]) for k in range(0, 70, 7)]), reference[:70]
        )
        assert flt.kernel(qs[:1])[0] == reference[0]
        before = flt.proven
        assert np.array_equal(s.prove_free(qs), reference)
        assert flt.proven - before == int(reference.sum())


def test_without_the_kernel_the_numpy_path_answers(group):
    s, flt = _session(group, 0.0)
    qs = _states(group, 500, 12)
    kernel_answer = s.prove_free(qs)
    flt.kernel = None  # as where numba does not import
    assert np.array_equal(s.prove_free(qs), kernel_answer)


def test_tables_are_lower_bounds_of_mujocos_distance(group):
    """At random states, each tabulated pair's entry is at most its mj_geomDistance (+ the
    1 um tolerance), and a table clears pairs (it is not vacuous)."""
    s, flt = _session(group, 0.0)
    assert len(flt.tab_off) > 0
    qs = _states(group, 300, 13)
    pairs = [
        (flt.moving_geoms[flt.gg[e, 0]], flt.moving_geoms[flt.gg[e, 1]], t)
        for e, t in enumerate(flt.gg_table)
        if t >= 0
    ]
    pairs += [
        (flt.moving_geoms[i], flt.static_geoms[k], flt.gs_table[i, k])
        for i, k in zip(*np.nonzero(flt.gs_table >= 0), strict=True)
    ]
    d = mujoco.MjData(s.model)
    d.qpos[:] = s.reference_qpos
    cleared = 0
    for q in qs:
        d.qpos[s.index] = q
        mujoco.mj_kinematics(s.model, d)
        rows = np.zeros(len(pairs), int)
        tabs = np.array([t for _, _, t in pairs])
        col = flt.tab_col[tabs]
        x = np.stack([q[col[:, 0]], q[col[:, 1]]], axis=1)
        i = np.clip(np.floor((x - flt.tab_lo[tabs]) * flt.tab_inv[tabs]), 0, flt.tab_n[tabs] - 1)
        i = i.astype(int)
        lb = flt.tab_lb[flt.tab_off[tabs] + i[:, 0] * flt.tab_n[tabs, 1] + i[:, 1]]
        cleared += int(flt._table_clear(q[None], rows, tabs, 0.0).sum())
        for (ga, gb, _), bound in zip(pairs, lb, strict=True):
            exact = mujoco.mj_geomDistance(s.model, d, int(ga), int(gb), float(bound) + 1.0, None)
            assert bound <= exact + 1e-6, (ga, gb, bound, exact)
    assert cleared > 0
