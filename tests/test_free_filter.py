"""The conservative free-space filter (``rob_twin.planners.free_filter``): its enclosures hold
every point of every geom kind, its batched kinematics equal MuJoCo's, it never calls a state
free that MuJoCo's exact distance puts within the margin (10^4 random states each on ROB,
OpenArm v2 and a generated robot), and the planner's plans are bit-identical with it on."""

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
from rob_twin.planners import search
from rob_twin.planners.collision import CollisionChecker
from rob_twin.planners.free_filter import (
    FreeSpaceFilter,
    exact_violations,
    geom_segment,
    geom_spheres,
    segment_distance,
    static_shape,
)
from rob_twin.planners.group import ArmGroup

PROPERTY_STATES = 10_000

SHAPES_XML = """
<mujoco>
  <asset>
    <mesh name="wedge" vertex="0 0 0  0.2 0 0  0 0.07 0  0 0 0.13  0.05 0.03 0.11"/>
  </asset>
  <worldbody>
    <geom name="sphere" type="sphere" size="0.07" pos="0 0 1"/>
    <geom name="capsule" type="capsule" size="0.03 0.11" pos="0.5 0 1" euler="0.3 0.2 0.1"/>
    <geom name="cylinder" type="cylinder" size="0.06 0.137" pos="1 0 1" euler="0.1 0.5 0"/>
    <geom name="box" type="box" size="0.005 0.025 0.21" pos="1.5 0 1" euler="0 0.4 0.9"/>
    <geom name="ellipsoid" type="ellipsoid" size="0.04 0.09 0.02" pos="2 0 1"/>
    <geom name="mesh" type="mesh" mesh="wedge" pos="2.5 0 1" euler="0.4 0 0.2"/>
  </worldbody>
</mujoco>
"""


def _inside(model: mujoco.MjModel, g: int, local: np.ndarray) -> np.ndarray:
    """Which points (geom frame) lie in geom ``g`` (for a mesh: its vertices' box, which
    holds the convex hull MuJoCo collides)."""
    kind, s = int(model.geom_type[g]), model.geom_size[g]
    x, y, z = local.T
    if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        return np.linalg.norm(local, axis=1) <= s[0]
    if kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
        zc = np.clip(z, -s[1], s[1])
        return np.hypot(np.hypot(x, y), z - zc) <= s[0]
    if kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        return (np.hypot(x, y) <= s[0]) & (np.abs(z) <= s[1])
    if kind == mujoco.mjtGeom.mjGEOM_ELLIPSOID:
        return (x / s[0]) ** 2 + (y / s[1]) ** 2 + (z / s[2]) ** 2 <= 1
    if kind == mujoco.mjtGeom.mjGEOM_MESH:
        mid = model.geom_dataid[g]
        v = model.mesh_vert[
            model.mesh_vertadr[mid] : model.mesh_vertadr[mid] + model.mesh_vertnum[mid]
        ]
        return np.all((local >= v.min(0)) & (local <= v.max(0)), axis=1)
    return np.all(np.abs(local) <= s[:3], axis=1)  # box


def test_enclosures_hold_every_point_of_every_geom_kind():
    model = mujoco.MjModel.from_xml_string(SHAPES_XML)
    rng = np.random.default_rng(0)
    for g in range(model.ngeom):
        c, h = model.geom_aabb[g, :3], model.geom_aabb[g, 3:] * 1.01
        pts = rng.uniform(c - h, c + h, (20_000, 3))
        pts = pts[_inside(model, g, pts)]
        assert len(pts) > 500
        centers, radii = geom_spheres(model, g)
        gap = np.linalg.norm(pts[:, None, :] - centers[None], axis=2) - radii[None]
        assert gap.min(axis=1).max() <= 1e-12, model.geom(g).name  # some sphere holds it
        a, b, radius, _ = geom_segment(model, g)
        ends = np.broadcast_to(a, pts.shape), np.broadcast_to(b, pts.shape)
        assert (segment_distance(pts, pts, *ends) - radius).max() <= 1e-12, model.geom(g).name
        offset, half, rounding = static_shape(model, g)
        out = np.maximum(np.abs(pts - offset) - half, 0.0)
        assert (np.linalg.norm(out, axis=1) - rounding).max() <= 1e-12, model.geom(g).name


def _rob():
    m, home = keyframe_state()
    group = ArmGroup(m, group_arms())
    group.set_qpos(home)
    return group


def _openarm():
    m = load_robot_model("openarm")
    group = ArmGroup(m, {a: [f"{a}/j{k}" for k in range(1, 8)] for a in ("right", "left")})
    group.set_qpos(m.key("home").qpos)
    return group


def _generated(tmp_path):
    robot = F.generate_robot(tmp_path / "gen", 3)
    m = load_robot_model(robot.robot_file)
    group = ArmGroup(m, robot.canonical_joints)
    group.set_qpos(m.key("home").qpos)
    return group


@pytest.fixture(params=["rob", "openarm", "generated"])
def group(request, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if request.param == "rob":
            return _rob()
        if request.param == "openarm":
            return _openarm()
        return _generated(tmp_path)


def _states(group: ArmGroup, n: int, seed: int) -> np.ndarray:
    lo = np.concatenate([group.joint_limits(a)[0] for a in group.arm_names])
    hi = np.concatenate([group.joint_limits(a)[1] for a in group.arm_names])
    return np.random.default_rng(seed).uniform(lo, hi, (n, lo.size))


def test_batched_kinematics_equal_mujocos(group):
    s = group.checker.session(group.arm_names, group.reference_qpos)
    flt = group.checker.free_filter(s)
    qs = _states(group, 40, 1)
    w = flt.points(qs)[:, flt.fine_point]
    d = mujoco.MjData(s.model)
    d.qpos[:] = s.reference_qpos
    geoms = flt.moving_geoms[flt.sphere_geom]
    for q, row in zip(qs, w, strict=True):
        d.qpos[s.index] = q
        mujoco.mj_kinematics(s.model, d)
        xmat = d.geom_xmat[geoms].reshape(-1, 3, 3)
        ref = d.geom_xpos[geoms] + np.einsum("kij,kj->ki", xmat, flt.sphere_in_geom)
        assert np.abs(ref - row).max() < 1e-12


def test_no_state_proven_free_is_within_the_margin(group):
    """10^4 uniform states: every one the filter proves free has every checked pair at least
    the margin apart by mj_geomDistance (and MuJoCo's own check agrees). On every robot some
    states are proven (OpenArm v2's link1 / link2 against the body and base and link6 against
    the fingers, 12-33 mm apart but never cleared by their mesh boxes, are cleared by the
    joint-space distance tables)."""
    for margin in (0.0, 0.005):
        cfg = replace(group.checker.config, margin_m=margin, horizon_m=margin)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            checker = CollisionChecker(group.model, group.checker.arm_joints, cfg)
        s = checker.session(group.arm_names, group.reference_qpos)
        qs = _states(group, PROPERTY_STATES, 2)
        proven = s.prove_free(qs)
        assert proven.mean() > 0.05
        bad, smallest = exact_violations(
            checker.source_model, s.reference_qpos, s.index, s.checked, margin, qs[proven]
        )
        assert bad == 0, f"{bad} pairs within {margin} m (smallest {smallest})"
        assert all(s.is_free(q) for q in qs[proven][:500])


def test_motion_answers_and_memory_are_the_same_with_a_proof():
    """A proof that proves some free states free changes neither the answer nor the
    remembered colliding state."""
    rng = np.random.default_rng(5)
    wall = 0.3

    def is_free(q):
        return bool(q[0] < wall)

    def prove(states):
        return (states[:, 0] < wall) & (rng.random(len(states)) < 0.7)

    for _ in range(200):
        a, b = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        m1, m2 = search.CollisionMemory(3), search.CollisionMemory(3)
        m1.add(np.array([0.5, 0.0, 0.0]))
        m2.add(np.array([0.5, 0.0, 0.0]))
        plain = search.motion_is_free(a, b, is_free, 0.01, m1)
        proven = search.motion_is_free(a, b, is_free, 0.01, m2, prove)
        assert plain == proven
        assert len(m1) == len(m2) and np.array_equal(m1._q[: len(m1)], m2._q[: len(m2)])


def test_plans_are_bit_identical_with_the_filter():
    from rob_twin.experiments.hard_problems import load, place_start

    plain = _rob()
    ref = plain.reference_qpos.copy()
    filtered = ArmGroup(
        plain.model,
        {a: plain.joint_names(a) for a in plain.arm_names},
        replace(plain.config, free_filter=True),
    )
    for i, p in enumerate(load("rob")[:3]):
        out = []
        for g in (plain, filtered):
            place_start(g, ref, p.start)
            out.append(g.plan(p.goal, seed=i).unwrap())
        a, b = out
        assert np.array_equal(a.waypoints, b.waypoints)
        assert np.array_equal(a.t, b.t)
        for arm in a.arms:
            assert np.array_equal(a.arms[arm].q, b.arms[arm].q)
    flt = next(iter(filtered.padded._filters.values()))
    assert flt.proven > 0


def test_a_model_it_cannot_bound_has_no_filter():
    xml = """<mujoco><worldbody><body><joint name="j" type="ball"/>
      <geom type="capsule" size="0.02 0.1"/></body>
      <body pos="1 0 0"><joint name="h" type="hinge"/><geom type="sphere" size="0.1"/></body>
      </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    assert FreeSpaceFilter.build(m, m.qpos0, np.array([4]), np.ones((2, 2), bool), 0.0)
    ball = np.array([0])  # a ball joint's first qpos: not a hinge or slide
    assert FreeSpaceFilter.build(m, m.qpos0, ball, np.ones((2, 2), bool), 0.0) is None


def test_segment_distance_is_the_closest_approach():
    rng = np.random.default_rng(7)
    k = 300
    p1, q1, p2, q2 = (rng.normal(0, 0.3, (k, 3)) for _ in range(4))
    q1[:40] = p1[:40]  # points against segments
    q2[20:60] = p2[20:60]  # and points against points
    q2[100:140] = p2[100:140] + (q1[100:140] - p1[100:140]) * 0.7  # parallel segments
    got = segment_distance(p1, q1, p2, q2)
    u = np.linspace(0.0, 1.0, 401)
    for i in range(k):
        a = p1[i] + np.outer(u, q1[i] - p1[i])
        b = p2[i] + np.outer(u, q2[i] - p2[i])
        brute = np.min(np.linalg.norm(a[:, None] - b[None], axis=2))
        step = (np.linalg.norm(q1[i] - p1[i]) + np.linalg.norm(q2[i] - p2[i])) / 400
        assert brute - step - 1e-12 <= got[i] <= brute + 1e-12
