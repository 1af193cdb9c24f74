"""The checker proven against coal: zero oracle-found collisions missed, per pair type."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from planner_fixtures import ROB_ARMS, STAND_ARMS, load_stand, rob_home
from rob_twin.models.loading import load_scene
from rob_twin.planners.collision import CollisionChecker
from rob_twin.planners.oracle import (
    Agreement,
    CoalOracle,
    agreement_on_configs,
    agreement_on_placements,
)
from test_collision import THIN_BOX_XML


def _joint_box(m, arms):
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for a in arms for j in arms[a]]
    return m.jnt_range[ids, 0], m.jnt_range[ids, 1]


def _study(model, fresh, arms, reference, configs, placements, seed):
    ch = CollisionChecker(model, arms)
    s = ch.session(list(arms), reference)
    rng = np.random.default_rng(seed)
    lo, hi = _joint_box(model, arms)
    result = Agreement(ch.config.margin_m, 1e-4)
    agreement_on_configs(s, CoalOracle(fresh), rng.uniform(lo, hi, (configs, lo.size)), result)
    agreement_on_placements(s, CoalOracle(fresh), placements, rng, result)
    return result


def test_rob_checker_misses_nothing_coal_finds_per_pair_type():
    m, home = rob_home()
    r = _study(m, load_scene(), ROB_ARMS, home, configs=40, placements=150, seed=7)
    types = set(r.by_type)
    assert {
        "capsule-capsule",
        "box-capsule",
        "capsule-mesh",
        "capsule-cylinder",
        "capsule-plane",
    } <= types
    for name, c in r.by_type.items():
        assert c.missed == 0, (name, c)
        assert c.oracle_hits > 0, name  # every type was really exercised


def test_stand_checker_misses_nothing_coal_finds_per_pair_type():
    m = load_stand()
    r = _study(m, load_stand(), STAND_ARMS, m.qpos0, configs=40, placements=150, seed=8)
    assert {
        "box-box",
        "box-capsule",
        "box-mesh",
        "box-sphere",
        "capsule-sphere",
        "sphere-sphere",
        "mesh-sphere",
        "capsule-mesh",
    } <= set(r.by_type)
    for name, c in r.by_type.items():
        assert c.missed == 0, (name, c)


def test_oracle_has_teeth_on_a_thin_primitive_box():
    """MuJoCo's capsule-box collider misses capsules crossing a thin box (DESIGN.md): the
    study must see it, or it would prove nothing."""
    m = mujoco.MjModel.from_xml_string(THIN_BOX_XML)
    with pytest.warns(UserWarning):
        ch = CollisionChecker(m, {"arm": ["j1"]})
    s = ch.session(["arm"], m.qpos0)
    r = Agreement(0.005, 1e-4)
    agreement_on_placements(s, CoalOracle(m), 400, np.random.default_rng(1), r)
    assert r.by_type["box-capsule"].missed > 0
