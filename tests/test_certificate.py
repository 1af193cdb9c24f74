"""Clearance certificates between samples (seed 003's multi-sample Lipschitz envelope)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.models import dimensions as D
from rob_twin.models.loading import apply_home, load_scene
from rob_twin.models.names import Arm, arm_joints, group_arms
from rob_twin.planners.certificate import (
    certify,
    certify_plan,
    chain_radii,
    consistent,
    lipschitz_bound,
)
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.goals import JointGoal
from rob_twin.planners.group import ArmGroup


def _group_at_home() -> ArmGroup:
    """A two-arm group on a fresh scene, its state at the home keyframe."""
    m = load_scene()
    d = mujoco.MjData(m)
    apply_home(m, d)
    group = ArmGroup(m, group_arms())
    group.set_qpos(d.qpos.copy())
    return group


def test_seed_003_worked_example():
    """Queries at 0, 1, 2 s: [5,7], [6,8], [5,7] mm, L = 4 mm/s -> 3.5 mm at 0.375 s."""
    c = certify([0, 1, 2], [5, 6, 5], [7, 8, 7], 4.0)
    assert c.consistent and c.certified
    assert c.min_lower_m == pytest.approx(3.5) and c.t_min_s in (
        pytest.approx(0.375),
        pytest.approx(1.625),
    )
    outer = certify([0, 2], [5, 5], [7, 7], 4.0)  # only the outer queries
    assert outer.min_lower_m == pytest.approx(1.0)


def test_inconsistent_intervals_give_no_certificate():
    # 10 mm then 0..1 mm one second later cannot happen at L = 4 mm/s
    assert not consistent(np.array([0.0, 1.0]), np.array([10.0, 0.0]), np.array([11.0, 1.0]), 4.0)
    assert not certify([0, 1], [10, 0], [11, 1], 4.0).certified


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=3, max_size=8),
    st.floats(0.1, 5.0),
    st.integers(0, 2**31),
)
def test_envelope_is_below_every_admissible_history(levels, L, seed):
    """Any L-Lipschitz history through the sample intervals stays above the certified bound."""
    rng = np.random.default_rng(seed)
    t_dense = np.linspace(0.0, 1.0, 801)
    # a random L-Lipschitz history: integrate a speed bounded by L
    steps = rng.uniform(-L, L, t_dense.size - 1) * np.diff(t_dense)
    d = np.concatenate([[levels[0] + 1.0], levels[0] + 1.0 + np.cumsum(steps)])
    idx = np.linspace(0, t_dense.size - 1, len(levels)).astype(int)
    width = rng.uniform(0.0, 0.05, len(levels))
    lo, hi = d[idx] - width, d[idx] + width
    c = certify(t_dense[idx], lo, hi, L)
    assert c.consistent
    assert d[idx[0] : idx[-1] + 1].min() >= c.min_lower_m - 1e-9


def test_bad_inputs_are_typed_errors():
    with pytest.raises(PlannerConfigError, match="strictly increasing"):
        certify([0, 0], [1, 1], [2, 2], 1.0)
    with pytest.raises(PlannerConfigError, match="lower <= upper"):
        certify([0, 1], [3, 1], [2, 2], 1.0)
    with pytest.raises(PlannerConfigError, match=">= 0 m/s"):
        certify([0, 1], [1, 1], [2, 2], float("nan"))
    with pytest.raises(PlannerConfigError, match="one per joint"):
        lipschitz_bound({"right": np.ones(3)}, {"right": np.ones(7)})


def test_chain_radii_bound_every_geom_point_in_random_configurations():
    m = load_scene()
    d = mujoco.MjData(m)
    names = arm_joints(Arm.RIGHT)
    radii = chain_radii(m, names)
    assert np.all(np.diff(radii) <= 1e-12) and 0.5 < radii[0] < 1.2  # outer joints move less
    rng = np.random.default_rng(0)
    jids = [m.joint(n).id for n in names]
    for _ in range(50):
        for jid in jids:
            lo, hi = m.jnt_range[jid]
            d.qpos[m.jnt_qposadr[jid]] = rng.uniform(lo, hi)
        mujoco.mj_kinematics(m, d)
        for k, jid in enumerate(jids):
            anchor = d.xanchor[jid]
            for g in range(m.ngeom):
                b = m.geom_bodyid[g]
                while b > 0 and b != m.jnt_bodyid[jid]:
                    b = m.body_parentid[b]
                if b == m.jnt_bodyid[jid]:
                    assert (
                        np.linalg.norm(d.geom_xpos[g] - anchor) + m.geom_rbound[g]
                        <= radii[k] + 1e-9
                    )


def test_a_real_plan_is_certified_between_its_samples():
    group = _group_at_home()
    home = np.array(D.HOME_ARM_POSE)
    goal = home + np.array([0.3, 0.2, 0.0, -0.3, 0.2, 0.1, 0.2])
    plan = group.plan(
        {
            "right": JointGoal(goal),
            "left": JointGoal(home + np.array([-0.2, 0.1, 0.2, -0.2, -0.1, 0.1, 0.3])),
        },
        seed=0,
    ).unwrap()
    cert = certify_plan(group, plan)
    assert cert.samples == plan.t.size and cert.max_lipschitz_m_s > 0
    assert cert.certified and cert.min_lower_m <= cert.min_sampled_m
    assert cert.min_sampled_m >= min(plan.min_clearance.distance_m, cert.horizon_m) - 1e-6


def test_every_plan_the_group_returns_carries_a_certificate():
    group = _group_at_home()
    home = np.array(D.HOME_ARM_POSE)
    plan = group.plan({"right": JointGoal(home + 0.2)}, seed=1).unwrap()
    cert = plan.certificate
    assert cert is not None and cert.certified and not cert.failure
    assert cert.margin_m <= cert.certified_min_m <= plan.min_clearance.distance_m + 1e-9
    assert "certify" in plan.stage_times_s
