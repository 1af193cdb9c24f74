"""MuJoCo 3.17's contact distance for separated pairs with a cylinder, against
``mj_geomDistance`` (which coal agrees with to 1e-6 m), at random placements within the
planner's 4 cm horizon.

Found at stop 55: a cylinder against a cylinder or a capsule is sometimes reported
*farther* than it is, so a certificate built on that figure overclaims. On MotionBenchMaker's
Baxter bookshelf (cylinder links) a plan's certificate said 18.164 mm for
``right_upper_forearm_visual vs left_lower_forearm`` where ``rob-twin certify`` (coal) found
17.863 mm and refused the plan. Probe (20,000 placements, seed 0): cylinder-cylinder up to
+0.68 mm in 43 of 2,866 separated placements; cylinder-capsule up to +21 mm (10.7 mm
reported for 5.4 mm) in 69 of 3,046. Cylinder-cylinder pairs are weak pairs since stop 55,
capsule-cylinder pairs since stop 56 (``rob_twin.planners.geom_pairs.weak_reason``: the
final check and the certificate judge them with coal, as ``certify`` does; ROB's arms
against its table legs and can are such pairs, and its plans were unchanged by it: the
fingerprint's 34 groups identical). The strict xfails below are about MuJoCo's own
figure: they turn into failures once MuJoCo's figures match.

Units: metres."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

HORIZON_M = 0.04
TOLERANCE_M = 1e-5


def _overclaims(other: str, size: str, placements: int = 6000, seed: int = 0) -> np.ndarray:
    """(contact distance - mj_geomDistance) [m] of a cylinder against ``other`` at random
    separated placements within the horizon."""
    xml = f"""<mujoco><worldbody>
      <body><freejoint/><geom type="cylinder" size="0.05 0.12" margin="{HORIZON_M}"/></body>
      <body><freejoint/><geom type="{other}" size="{size}" margin="{HORIZON_M}"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(placements):
        quat = rng.normal(size=4)
        d.qpos[:] = np.r_[
            0, 0, 0, 1, 0, 0, 0, rng.uniform(-0.25, 0.25, 3), quat / np.linalg.norm(quat)
        ]
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        true = mujoco.mj_geomDistance(m, d, 0, 1, HORIZON_M, None)
        if 0.0 < true < HORIZON_M:
            assert d.ncon > 0, "a separated pair within the horizon got no contact"
            out.append(d.contact.dist[: d.ncon].min() - true)
    return np.asarray(out)


@pytest.mark.parametrize(("other", "size"), [("sphere", "0.05"), ("ellipsoid", "0.04 0.05 0.08")])
def test_a_cylinder_against_a_sphere_or_ellipsoid_is_exact(other, size):
    """The probe has teeth: where MuJoCo's figure is exact it finds no error."""
    err = _overclaims(other, size)
    assert err.size > 300
    assert np.abs(err).max() < TOLERANCE_M


@pytest.mark.xfail(
    strict=True,
    reason="MuJoCo 3.17 reports some separated cylinder-cylinder and cylinder-capsule pairs "
    "farther than they are (up to +0.68 mm and +21 mm in the probe)",
)
@pytest.mark.parametrize(("other", "size"), [("cylinder", "0.04 0.10"), ("capsule", "0.04 0.10")])
def test_a_cylinder_against_a_cylinder_or_capsule_is_never_reported_farther(other, size):
    err = _overclaims(other, size)
    assert err.size > 300
    assert err.max() < TOLERANCE_M, f"up to {err.max() * 1e3:.3f} mm farther than it is"


def test_cylinder_pairs_are_weak_pairs_judged_by_coal():
    from rob_twin.planners.geom_pairs import weak_reason

    xml = """<mujoco><worldbody>
      <geom name="c1" type="cylinder" size="0.05 0.1"/>
      <geom name="c2" type="cylinder" size="0.05 0.1" pos="1 0 0"/>
      <geom name="k" type="capsule" size="0.05 0.1" pos="2 0 0"/>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    assert weak_reason(m, 0, 1) == "cylinder vs cylinder"
    assert weak_reason(m, 0, 2) == "capsule vs cylinder"
