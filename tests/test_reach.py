"""Out-of-reach geoms: an arm's reach bounds every point it moves (hinge anchors off their
body's origin and open fingers included), a session leaves out only geoms its arms can never
bring within the horizon and reports the same checked contacts as the whole model, and the
checker's body-level collision bits follow its geom bits."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from planner_fixtures import ROB_ARMS, rob_home
from rob_twin.planners.collision import CollisionChecker, CollisionConfig
from rob_twin.planners.geom_pairs import subtree_bodies
from rob_twin.planners.reach import arm_reach_m

ARMS2 = ("right", "left")


def _arm(anchor_y: float, slide: bool) -> mujoco.MjModel:
    """One planar arm: an elbow turning about an anchor ``anchor_y`` [m] off its body's
    origin, and a finger that slides 6 cm (or is rigid)."""
    finger = '<joint type="slide" axis="1 0 0" range="0 0.06"/>' if slide else ""
    return mujoco.MjModel.from_xml_string(f"""
<mujoco><compiler autolimits="true"/><worldbody>
  <body name="l1"><joint name="j1" axis="0 0 1"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
    <body name="l2" pos="0.3 0 0"><joint axis="0 0 1" pos="0 {anchor_y} 0"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
      <body pos="0.2 0 0">{finger}<geom type="sphere" size="0.01"/></body>
    </body>
  </body>
</worldbody></mujoco>""")


def _farthest_m(model: mujoco.MjModel, qpos_rows) -> float:
    """The largest distance [m] from joint 0's anchor of any point of any geom (its
    centre plus bounding radius) over ``qpos_rows``."""
    d = mujoco.MjData(model)
    far = 0.0
    for qpos in qpos_rows:
        d.qpos[:] = qpos
        mujoco.mj_kinematics(model, d)
        reach = np.linalg.norm(d.geom_xpos - d.xanchor[0], axis=1) + model.geom_rbound
        far = max(far, float(reach.max()))
    return far


def test_an_off_origin_hinge_anchor_and_a_slide_widen_the_reach():
    """Summing body offsets alone falls short in both cases: an origin swinging about an
    anchor 5 cm off it reaches 1 cm farther, and a finger sliding out 6 cm farther."""
    turns = np.linspace(-np.pi, np.pi, 721)
    hinge = _arm(0.05, slide=False)
    far = _farthest_m(hinge, [[0.0, t] for t in turns])
    assert far <= arm_reach_m(hinge, 0) + 1e-12
    assert far > arm_reach_m(hinge, 0) - 2 * 0.05  # the anchor's term is needed
    sliding = _arm(0.0, slide=True)
    far = _farthest_m(sliding, [[0.0, t, s] for t in turns for s in (0.0, 0.06)])
    assert far <= arm_reach_m(sliding, 0) + 1e-12
    assert far > arm_reach_m(sliding, 0) - 0.06  # the slide's term is needed


def test_no_point_of_robs_arms_leaves_their_reach():
    m, home = rob_home()
    rng = np.random.default_rng(1)
    lo, hi = m.jnt_range[:, 0], m.jnt_range[:, 1]
    rows = []
    for _ in range(300):
        qpos = home.copy()
        for j in range(m.njnt):
            if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                qpos[m.jnt_qposadr[j]] = rng.choice([lo[j], hi[j], rng.uniform(lo[j], hi[j])])
        rows.append(qpos)
    d = mujoco.MjData(m)
    for arm, joints in ROB_ARMS.items():
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, joints[0])
        geoms = np.isin(m.geom_bodyid, list(subtree_bodies(m, int(m.jnt_bodyid[j]))))
        reach, far = arm_reach_m(m, j), 0.0
        for qpos in rows:
            d.qpos[:] = qpos
            mujoco.mj_kinematics(m, d)
            dist = np.linalg.norm(d.geom_xpos[geoms] - d.xanchor[j], axis=1)
            far = max(far, float((dist + m.geom_rbound[geoms]).max()))
        assert 0.5 * reach < far <= reach, arm


def _left_out(checker: CollisionChecker, session) -> set[str]:
    full, mine = checker.model, session.model
    names = checker.pairs.geom_names
    return {
        names[g]
        for g in range(full.ngeom)
        if (full.geom_contype[g] | full.geom_conaffinity[g])
        and not (mine.geom_contype[g] | mine.geom_conaffinity[g])
    }


def _checked_contacts(model, data, q_full, checked):
    data.qpos[:] = q_full
    mujoco.mj_kinematics(model, data)
    mujoco.mj_collision(model, data)
    con = data.contact
    out = sorted(
        (int(min(g)), int(max(g)), float(dist))
        for g, dist in zip(con.geom[: data.ncon], con.dist[: data.ncon], strict=True)
        if checked[g[0], g[1]]
    )
    return out


@pytest.mark.parametrize("moving", [ARMS2, ("right",)])
def test_a_session_leaves_out_only_what_its_arms_cannot_reach(moving):
    m, home = rob_home()
    checker = CollisionChecker(m, ROB_ARMS, CollisionConfig(margin_m=0.005, horizon_m=0.04))
    s = checker.session(moving, home)
    left_out = _left_out(checker, s)
    assert {"floor", "room/wall_north", "room/wall_east"} <= left_out
    assert not left_out & {"torso/shell", "table/top", "can/body", "base/chassis"}
    if moving == ("right",):  # the locked left arm stays near the moving right one
        assert not any(name.startswith("left/") for name in left_out)
    rng = np.random.default_rng(3)
    lo = np.concatenate([m.jnt_range[m.jnt_qposadr.tolist().index(i)] for i in s.index])[::2]
    hi = np.concatenate([m.jnt_range[m.jnt_qposadr.tolist().index(i)] for i in s.index])[1::2]
    full_data, pruned_data = mujoco.MjData(checker.model), mujoco.MjData(s.model)
    contacts = 0
    for _ in range(400):
        q_full = s.full_qpos(rng.uniform(lo, hi))
        want = _checked_contacts(checker.model, full_data, q_full, s.checked)
        assert _checked_contacts(s.model, pruned_data, q_full, s.checked) == want
        contacts += len(want)
    assert contacts > 400  # the states do come within the horizon of something


def test_a_wall_within_reach_is_kept_and_reported():
    """ROB driven next to the north wall: the wall stays a candidate, and an arm reaching
    into it is not free."""
    m, home = rob_home()
    checker = CollisionChecker(m, ROB_ARMS)
    wall = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "room/wall_north")
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    qpos = home.copy()
    # the base's free joint: slide the robot along the wall's normal until its shoulder is
    # 30 cm from the wall's face
    normal = d.geom_xmat[wall].reshape(3, 3)[:, 0]
    face = d.geom_xpos[wall] - normal * np.sign(normal @ d.geom_xpos[wall]) * m.geom_size[wall, 0]
    d.qpos[:] = home
    mujoco.mj_kinematics(m, d)
    shoulder = d.xanchor[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, ROB_ARMS["right"][0])]
    gap = float(normal @ (face - shoulder))
    qpos[0:3] += normal * (gap - np.sign(gap) * 0.3)
    s = checker.session(ARMS2, qpos)
    assert "room/wall_north" not in _left_out(checker, s)
    assert "floor" in _left_out(checker, s)


def test_body_bits_follow_the_geom_bits():
    """MuJoCo filters body pairs by each body's bits before it looks at geoms: in the
    checker's model and in a session's, they are the OR of the body's geoms' bits, so the
    world body, whose floor and walls a session leaves out, is no candidate at all."""
    m, home = rob_home()
    checker = CollisionChecker(m, ROB_ARMS)
    s = checker.session(ARMS2, home)
    for model in (checker.model, s.model):
        for b in range(model.nbody):
            geoms = model.geom_bodyid == b
            assert model.body_contype[b] == np.bitwise_or.reduce(
                model.geom_contype[geoms], initial=0
            )
            assert model.body_conaffinity[b] == np.bitwise_or.reduce(
                model.geom_conaffinity[geoms], initial=0
            )
    assert checker.model.body_contype[0] != 0 and s.model.body_contype[0] == 0
    assert s.model.body_conaffinity[0] == 0
