"""The weak-pair judge's compiled pre-check (``rob_twin.planners.weak_judge_kernel``) gives
the numpy path's figures bit for bit: the same capped bounds and the same pairs handed to
coal, on random geometry (spheres, boxes, planes, rotated, near and far, one state and
many) and on a box-link robot's weak pairs at random states; ``_capped`` gives the same
distances either way; ArmGroup loads it when it is built for a model with weak pairs.

Units: metres.
"""

from __future__ import annotations

import numpy as np
import pytest
from planner_fixtures import STAND_ARMS, load_stand
from rob_twin.planners import weak_judge
from rob_twin.planners.certificate_geometry import _group_geometry
from rob_twin.planners.group import ArmGroup

HORIZON_M = 0.04


class _Pairs:
    """A ``weak_judge._PairSet`` made of random numbers (``_cull`` reads only these)."""

    def __init__(self, rng: np.random.Generator, n_geoms: int, n_pairs: int) -> None:
        # 0 round (a capsule, cylinder or sphere about its z axis), 1 box, 2 plane
        kind = rng.choice(3, n_geoms, p=[0.5, 0.4, 0.1])
        self.i1 = rng.integers(0, n_geoms, n_pairs)
        self.i2 = (self.i1 + rng.integers(1, n_geoms, n_pairs)) % n_geoms
        box = kind == 1
        self.half = np.where(box[:, None], rng.uniform(0.002, 0.2, (n_geoms, 3)), 0.0)
        radius = np.where(box, np.linalg.norm(self.half, axis=1), rng.uniform(0.005, 0.15, n_geoms))
        self.round_ = np.where(box, np.nan, radius)
        self.rb1, self.rb2 = radius[self.i1], radius[self.i2]
        self.plane = (kind[self.i1] == 2) | (kind[self.i2] == 2)
        self.box_pair = box[self.i1] | box[self.i2]
        self.boxes = np.flatnonzero(self.box_pair)
        self.box_geoms = np.unique(np.concatenate([self.i1[self.boxes], self.i2[self.boxes]]))
        seg = kind == 0
        self.segment_pair = seg[self.i1] & seg[self.i2]
        self.segments = np.flatnonzero(self.segment_pair)
        sphere = rng.random(n_geoms) < 0.2  # no axis: a segment of no length
        self.seg_half = np.where(seg & ~sphere, rng.uniform(0.0, 0.6, n_geoms) * radius, 0.0)
        self.seg_radius = np.where(seg, radius - self.seg_half, 0.0)
        self.seg_cylinder = seg & ~sphere & (rng.random(n_geoms) < 0.5)


def _poses(rng: np.random.Generator, n_states: int, n_geoms: int, spread_m: float):
    pos = rng.uniform(-spread_m, spread_m, (n_states, n_geoms, 3))
    q = rng.normal(size=(n_states, n_geoms, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    mat = np.stack(
        [
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ],
        axis=-1,
    )  # fmt: skip
    return pos, mat


@pytest.fixture(scope="module")
def kernel():
    assert weak_judge.warm_kernel()
    return weak_judge._kernel


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_states", [1, 9])
def test_the_compiled_pre_check_gives_the_numpy_figures_bit_for_bit(kernel, seed, n_states):
    rng = np.random.default_rng(seed)
    pairs = _Pairs(rng, n_geoms=40, n_pairs=300)
    spread = (0.15, 0.4, 1.0)[seed % 3]  # crowded to sparse: near and far pairs both
    pos, mat = _poses(rng, n_states, 40, spread)
    want_out, want_query = weak_judge._cull_numpy(pairs, pos, mat, HORIZON_M)
    out, query = kernel.cull(
        pos, mat, pairs.i1, pairs.i2, pairs.rb1, pairs.rb2, pairs.plane, pairs.box_pair,
        pairs.half, pairs.round_, pairs.segment_pair, pairs.seg_half, pairs.seg_radius,
        pairs.seg_cylinder, HORIZON_M,
    )  # fmt: skip
    assert np.array_equal(query, want_query)
    assert np.array_equal(out, want_out)
    # the bound did work: some pairs were sent to coal, some culled by the box test alone
    assert 0 < query.sum() < query.size
    # and, where pairs are near, the segment test culled some the bounding spheres did not
    if spread == 1.0 or n_states == 1:
        return
    c = pairs.segments
    diff = pos[:, pairs.i1[c]] - pos[:, pairs.i2[c]]
    sphere_gap = np.linalg.norm(diff, axis=-1) - pairs.rb1[c] - pairs.rb2[c]
    assert ((sphere_gap < HORIZON_M) & ~query[:, c] & ~pairs.plane[c]).any()


def test_a_box_link_robots_weak_pairs_are_judged_alike_either_way(kernel, monkeypatch):
    """The two-arm stand: its weak pairs (box vs box) at random states, ``_capped`` with
    the kernel and with the numpy path: the same distances and the same coal queries."""
    group = ArmGroup(load_stand(), STAND_ARMS)
    assert group.checker.weak_pairs and weak_judge._kernel is kernel
    moving = tuple(group.arm_names)
    session = group.meter.session(moving, group.reference_qpos)
    judge = weak_judge.judge_for(group, _group_geometry(group, moving, 0.0))
    assert judge is not None
    lo = np.concatenate([group.joint_limits(a)[0] for a in moving])
    hi = np.concatenate([group.joint_limits(a)[1] for a in moving])
    states = np.random.default_rng(7).uniform(lo, hi, (400, lo.size))
    _, pos, mat = session.contacts_and_poses_of(states, judge.geoms)
    compiled = judge.at_poses(pos, mat)
    monkeypatch.setattr(weak_judge, "_kernel", None)
    plain = judge.at_poses(pos, mat)
    assert np.array_equal(compiled, plain, equal_nan=True)
    assert (compiled < judge.horizon_m).any()  # some weak pairs were within the horizon


@pytest.mark.parametrize(
    ("kind1", "kind2"),
    [
        ("capsule", "cylinder"),
        ("cylinder", "cylinder"),
        ("sphere", "cylinder"),
        ("capsule", "capsule"),
    ],
)
def test_the_segment_bound_never_exceeds_the_true_distance(kind1, kind2):
    """The capsule about a sphere, capsule or cylinder's axis holds it, so the segments'
    distance less both radii is a lower bound of the pair's distance: held against
    ``mj_geomDistance`` (which coal agrees with) at random placements, near and crossing,
    and tight for two capsules."""
    import mujoco

    size = {"sphere": "0.05", "capsule": "0.04 0.12", "cylinder": "0.05 0.10"}
    xml = f"""<mujoco><worldbody>
      <body><freejoint/><geom type="{kind1}" size="{size[kind1]}"/></body>
      <body><freejoint/><geom type="{kind2}" size="{size[kind2]}"/></body>
    </worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    pairs = weak_judge._PairSet(model, np.array([0]), np.array([1]))
    rng = np.random.default_rng(3)
    pos, mat, true = [], [], []
    for _ in range(3000):
        quat = rng.normal(size=4)
        data.qpos[:] = np.r_[
            0, 0, 0, 1, 0, 0, 0, rng.uniform(-0.3, 0.3, 3), quat / np.linalg.norm(quat)
        ]
        mujoco.mj_kinematics(model, data)
        pos.append(data.geom_xpos.copy())
        mat.append(data.geom_xmat.copy())
        true.append(mujoco.mj_geomDistance(model, data, 0, 1, 1.0, None))
    pos, mat, true = np.array(pos), np.array(mat), np.array(true)
    bound = weak_judge._segment_gaps(pairs, pos, mat, pairs.segments)[:, 0]
    separated = true > 0
    assert separated.sum() > 1000 and (~separated).sum() > 100
    assert (bound[separated] <= true[separated] + 1e-9).all()
    if kind1 == kind2 == "capsule":
        assert np.abs(bound[separated] - true[separated]).max() < 1e-6


@pytest.mark.parametrize("kind", ["cylinder", "capsule", "sphere"])
def test_the_world_box_of_a_cylinder_capsule_or_sphere_holds_it(kind):
    """``_extents`` for round geoms: every point of the geom (a cylinder's rims, a capsule's
    end spheres: where its farthest points along any axis lie) within its world box, and the
    box touched (it is the geom's own, not a looser one, up to the bounding sphere)."""
    import mujoco

    size = {"sphere": "0.05", "capsule": "0.04 0.12", "cylinder": "0.05 0.10"}[kind]
    xml = f"""<mujoco><worldbody><body><freejoint/>
      <geom type="{kind}" size="{size}"/></body></worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    pairs = weak_judge._PairSet(model, np.array([0]), np.array([0]))
    r, h = pairs.seg_radius[0], pairs.seg_half[0]
    rng = np.random.default_rng(5)
    _, mat = _poses(rng, 500, 1, 0.0)
    ext = weak_judge._extents(
        pairs.half, pairs.round_, pairs.seg_half, pairs.seg_radius, pairs.seg_cylinder, mat
    )[:, 0]
    a = rng.uniform(0, 2 * np.pi, 4000)
    end = np.where(rng.random(4000) < 0.5, h, -h)
    if kind == "cylinder":  # the two rims
        local = np.stack([r * np.cos(a), r * np.sin(a), end], axis=1)
    else:  # the end spheres (one sphere for a sphere)
        u = rng.normal(size=(4000, 3))
        local = r * u / np.linalg.norm(u, axis=1, keepdims=True)
        local[:, 2] += end
    world = np.einsum("sij,pj->spi", mat.reshape(-1, 3, 3), local)
    reach = np.abs(world).max(axis=1)  # (S, 3) the points' farthest along each world axis
    assert (reach <= ext + 1e-12).all()
    assert np.abs(reach - ext).max() < 0.01 * r  # tight where below the sphere
