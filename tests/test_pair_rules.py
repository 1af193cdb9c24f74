"""The planner's allowed-pair rules on robots other than ROB: a parent welded to the world is
adjacent, and a rigidly coupled mechanism's pairs within the margin at the reference pose are
exempt and reported, never an arm-vs-arm or arm-vs-world pair (simulated)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from rob_twin.planners.collision import CollisionChecker
from rob_twin.planners.geom_pairs import (
    ADJACENT_WORLD_PARENT,
    RIGID_AT_REFERENCE,
    RIGID_TOLERANCE_M,
    GeomPairTable,
    PairClass,
)
from rob_twin.planners.group import ArmGroup

MARGIN_M = 0.005
PAD_GAP_M = MARGIN_M + 3e-6  # inside margin + the certificate's 10 um, not "touching"
OFF = 0.005 + PAD_GAP_M / 2  # a pad's centre from the middle of the gap [m]
PAD = 'type="box" size="0.01 0.005 0.01"'  # 1 cm thick in y

# An arm mounted on a base welded to the world (no joint between them), 1 mm above it; a
# post welded to the world beside it; a welded cover on the base. The hand carries two
# finger bodies on slide joints the planner does not move, whose pads are PAD_GAP_M apart.
WELDED_BASE_XML = f"""
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" pos="0 0 -0.5"/>
    <body name="post"><geom name="post_geom" type="box" size="0.05 0.05 0.3" pos="0.6 0 0"/>
    </body>
    <body name="base" pos="0 0 0">
      <geom name="base_geom" type="box" size="0.05 0.05 0.05"/>
      <body name="cover" pos="0 0 0.0">
        <geom name="cover_geom" type="box" size="0.06 0.06 0.005" pos="0 0 0.045"/>
      </body>
      <body name="link1" pos="0 0 0.051">
        <joint name="j1" type="hinge" axis="0 0 1"/>
        <geom name="link1_geom" type="box" size="0.03 0.03 0.05" pos="0 0 0.05"/>
        <body name="link2" pos="0 0 0.1">
          <joint name="j2" type="hinge" axis="0 1 0"/>
          <geom name="link2_geom" type="box" size="0.125 0.02 0.02" pos="0.125 0 0"/>
          <body name="hand" pos="0.3 0 0">
            <joint name="j3" type="hinge" axis="1 0 0"/>
            <geom name="palm" type="box" size="0.02 0.04 0.02"/>
            <body name="finger_a" pos="0.04 0 0">
              <joint name="fa" type="slide" axis="0 1 0" range="-0.02 0.02"/>
              <geom name="pad_a" {PAD} pos="0 {-OFF} 0"/>
            </body>
            <body name="finger_b" pos="0.04 0 0">
              <joint name="fb" type="slide" axis="0 1 0" range="-0.02 0.02"/>
              <geom name="pad_b" {PAD} pos="0 {OFF} 0"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

ARM = {"arm": ["j1", "j2", "j3"]}

# The same pads, one on each of two arms (each pad on its arm's last link), PAD_GAP_M apart;
# and on one arm a link3 pad PAD_GAP_M from a link1 pad (planned joints between them).
TWO_ARMS_XML = f"""
<mujoco>
  <worldbody>
    <body name="a1" pos="0 -0.3 0">
      <joint name="a_j1" type="hinge" axis="0 0 1"/>
      <geom name="a_link1" type="box" size="0.02 0.02 0.02"/>
      <geom name="a_low_pad" {PAD} pos="0.1 {0.2 - OFF} 0.2"/>
      <body name="a2" pos="0 0 0.1">
        <joint name="a_j2" type="hinge" axis="0 1 0"/>
        <geom name="a_link2" type="box" size="0.02 0.02 0.02"/>
        <body name="a3" pos="0 0 0.1">
          <joint name="a_j3" type="hinge" axis="0 1 0"/>
          <geom name="a_high_pad" {PAD} pos="0.1 {0.2 + OFF} 0"/>
          <geom name="a_pad" {PAD} pos="0.3 {0.3 - OFF} 0"/>
        </body>
      </body>
    </body>
    <body name="b1" pos="0 0.3 0">
      <joint name="b_j1" type="hinge" axis="0 0 1"/>
      <geom name="b_link1" type="box" size="0.02 0.02 0.02"/>
      <body name="b2" pos="0 0 0.1">
        <joint name="b_j2" type="hinge" axis="0 1 0"/>
        <geom name="b_link2" type="box" size="0.02 0.02 0.02"/>
        <body name="b3" pos="0 0 0.1">
          <joint name="b_j3" type="hinge" axis="0 1 0"/>
          <geom name="b_pad" {PAD} pos="0.3 {-0.3 + OFF} 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""
TWO_ARMS = {"a": ["a_j1", "a_j2", "a_j3"], "b": ["b_j1", "b_j2", "b_j3"]}


@pytest.fixture(scope="module")
def welded():
    m = mujoco.MjModel.from_xml_string(WELDED_BASE_XML)
    return m, GeomPairTable(m, ARM, MARGIN_M)


def _gid(m, name):
    return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name)


def _reasons(table):
    return {frozenset((a.name1, a.name2)): a for a in table.allowed}


def _distance(m, g1, g2):
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    return mujoco.mj_geomDistance(m, d, _gid(m, g1), _gid(m, g2), 1.0, None)


def test_the_models_are_built_as_described(welded):
    m, _ = welded
    assert 0.0009 < _distance(m, "base_geom", "link1_geom") < 0.0011  # 1 mm, inside the margin
    assert _distance(m, "pad_a", "pad_b") == pytest.approx(PAD_GAP_M, abs=1e-9)
    two = mujoco.MjModel.from_xml_string(TWO_ARMS_XML)
    assert _distance(two, "a_pad", "b_pad") == pytest.approx(PAD_GAP_M, abs=1e-9)
    assert _distance(two, "a_low_pad", "a_high_pad") == pytest.approx(PAD_GAP_M, abs=1e-9)


def test_a_parent_welded_to_the_world_is_adjacent_to_link1(welded):
    m, table = welded
    reasons = _reasons(table)
    for partner in ("base_geom", "cover_geom"):  # the parent and a body welded onto it
        pair = reasons[frozenset((partner, "link1_geom"))]
        assert pair.reason == ADJACENT_WORLD_PARENT
        assert table.table[_gid(m, partner), _gid(m, "link1_geom")] == PairClass.ALLOWED
    # the world itself and another body welded to the world stay checked, as does the base
    # against link2 (a joint further out)
    assert table.table[_gid(m, "post_geom"), _gid(m, "link1_geom")] == PairClass.ARM_WORLD
    assert table.table[_gid(m, "floor"), _gid(m, "link1_geom")] == PairClass.ARM_WORLD
    assert table.table[_gid(m, "base_geom"), _gid(m, "link2_geom")] == PairClass.ARM_BODY


def test_an_arm_on_a_welded_base_is_free_at_its_start_and_plans():
    m = mujoco.MjModel.from_xml_string(WELDED_BASE_XML)
    group = ArmGroup(m, ARM)
    assert group.clearance({"arm": np.zeros(3)}).is_free(MARGIN_M)
    res = group.plan({"arm": np.array([1.0, -0.4, 0.5])}, seed=0)
    assert res.ok, (res.status, res.reason)


def test_a_rigid_pair_within_the_margin_at_reference_is_exempt_and_reported(welded):
    m, table = welded
    pair = _reasons(table)[frozenset(("pad_a", "pad_b"))]
    assert pair.reason == RIGID_AT_REFERENCE
    assert pair.reference_distance_m == pytest.approx(PAD_GAP_M, abs=1e-9)
    assert table.table[_gid(m, "pad_a"), _gid(m, "pad_b")] == PairClass.ALLOWED
    # the pads against the rest of the arm stay checked where a planned joint lies between
    assert table.table[_gid(m, "pad_a"), _gid(m, "link2_geom")] == PairClass.SELF
    # beyond margin + tolerance the same rigid pair is checked like any other
    far = GeomPairTable(m, ARM, PAD_GAP_M - RIGID_TOLERANCE_M - 1e-6)
    assert far.table[_gid(m, "pad_a"), _gid(m, "pad_b")] == PairClass.SELF


def test_the_same_geometry_between_two_arms_or_across_a_planned_joint_is_checked():
    m = mujoco.MjModel.from_xml_string(TWO_ARMS_XML)
    table = GeomPairTable(m, TWO_ARMS, MARGIN_M)
    assert table.table[_gid(m, "a_pad"), _gid(m, "b_pad")] == PairClass.ARM_ARM
    assert table.table[_gid(m, "a_low_pad"), _gid(m, "a_high_pad")] == PairClass.SELF
    exempt = {frozenset((a.name1, a.name2)) for a in table.allowed}
    assert frozenset(("a_pad", "b_pad")) not in exempt
    assert frozenset(("a_low_pad", "a_high_pad")) not in exempt


def test_the_checker_skips_the_exempt_pads_and_still_sees_the_arm_pair():
    one = CollisionChecker(mujoco.MjModel.from_xml_string(WELDED_BASE_XML), ARM)
    session = one.session(["arm"], np.zeros(one.model.nq))
    assert session.clearance(np.zeros(3)).distance_m >= MARGIN_M
    two = CollisionChecker(mujoco.MjModel.from_xml_string(TWO_ARMS_XML), TWO_ARMS)
    session = two.session(["a", "b"], np.zeros(two.model.nq))
    c = session.clearance(np.zeros(6))
    assert c.distance_m == pytest.approx(PAD_GAP_M, abs=1e-6)
    assert {c.pair.name1, c.pair.name2} in ({"a_pad", "b_pad"}, {"a_low_pad", "a_high_pad"})
