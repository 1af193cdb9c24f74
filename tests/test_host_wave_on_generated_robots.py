"""``rob-twin host --stream wave`` on generated Damiao robots nobody tuned: a bank's Damiao
arms start limp, where they fell (seed 6's wrists a millimetre above the floor), and the
wave around that pose drove a wrist into the floor; the bank's physics stopped it and both
owners latched ``tracking_error`` a second into the run (joint 5: 0.151 rad > 0.15 rad).
The host now checks the wave on the robot's own model before it enables a drive and
refuses it (exit 2, naming the geoms, the depth and when); a wave around home stays clear.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from bank_support import running_bank
from rob_twin.cli.main import main
from rob_twin.experiments import robot_factory as F
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.twin.bus.host_process import BOUND_MARGIN_RAD, wave_around
from rob_twin.twin.bus.wave_clearance import CONTACT_TOLERANCE_M, first_wave_contact

RUN_S = 5.0  # the run the fault was seen in


def _generated(tmp_path, family: str, joints: int, seed: int):
    folder = tmp_path / f"{family}{joints}"
    gen = F.generate_robot(folder, seed, family=family, joints=joints, mounting="side_by_side")
    return gen, robot_of(gen.robot_file)


def _wave_contact(robot, start: dict[Arm, np.ndarray]):
    """The host's wave from ``start`` (the host's own bounds and phases) checked as the
    host checks it."""
    sources = {}
    for k, arm in enumerate(Arm):
        lo = np.array([r[0] for r in robot.joint_ranges(arm)]) + BOUND_MARGIN_RAD
        hi = np.array([r[1] for r in robot.joint_ranges(arm)]) - BOUND_MARGIN_RAD
        sources[arm.value] = wave_around(np.clip(start[arm], lo, hi), k, lo, hi)
    joints = {a.value: robot.joints(a) for a in Arm}
    return first_wave_contact(robot.model(), joints, sources, RUN_S)


def _limp(robot, seconds: float = 4.0) -> dict[Arm, np.ndarray]:
    """Where the arms come to rest from home with no torque (a bank's disabled drives)."""
    model = robot.model()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    for _ in range(round(seconds / model.opt.timestep)):
        mujoco.mj_step(model, data)
    return {
        a: data.qpos[[model.jnt_qposadr[model.joint(j).id] for j in robot.joints(a)]].copy()
        for a in Arm
    }


@pytest.mark.realtime
def test_the_host_refuses_a_wave_into_the_floor_before_enabling_a_drive(tmp_path, capsys):
    gen, robot = _generated(tmp_path, "damiao", 6, 6)
    with running_bank(tmp_path, "--robot", str(gen.robot_file)) as bank:
        argv = ["host", "--robot", str(gen.robot_file), "--port", str(bank.socketcand_port)]
        code = main([*argv, "--stream", "wave", "--seconds", str(RUN_S)])
        err = capsys.readouterr().err
        bank.shutdown()
    assert code == 2, err  # it was 1: both owners latched tracking_error mid-run
    assert "runs into the robot" in err and "geom ground" in err, err
    assert "streaming" not in err  # refused before the drives were enabled


@pytest.mark.parametrize(
    ("family", "joints", "seed"),
    [("damiao", 5, 6), ("damiao", 6, 6), ("damiao", 7, 6), ("amber", 7, 4)],
)
def test_the_wave_around_home_stays_clear(tmp_path, family, joints, seed):
    """Home is generated clear of every pair; the wave around it must be followable."""
    _, robot = _generated(tmp_path, family, joints, seed)
    hit = _wave_contact(robot, {a: robot.home(a) for a in Arm})
    assert hit is None, hit.describe()


def test_the_wave_from_the_limp_arms_goes_into_the_floor(tmp_path):
    """The in-process form of the live failure: from where the limp arms of seed 6 rest,
    the wave pushes a wrist into the floor, well past the tolerance."""
    _, robot = _generated(tmp_path, "damiao", 6, 6)
    hit = _wave_contact(robot, _limp(robot))
    assert hit is not None
    assert "wrist" in hit.moving and "ground" in hit.other, hit.describe()
    assert hit.depth_m > 10 * CONTACT_TOLERANCE_M, hit.describe()
    assert 0 < hit.first_s <= hit.deepest_s <= RUN_S


def test_a_second_wave_on_rob_from_where_the_first_left_it_is_mirrored_not_refused():
    """ROB's arms where a first host's 2 s wave left them: the same wave again drives the
    left arm's link3 into its mount; the host takes the first clear one of WAVE_SCALES (the
    mirrored wave), where it refused every second host with the default stream."""
    from rob_twin.twin.bus.host_process import WAVE_SCALES, clear_wave

    robot = robot_of("rob")
    lo = {a: np.array([r[0] for r in robot.joint_ranges(a)]) + BOUND_MARGIN_RAD for a in Arm}
    hi = {a: np.array([r[1] for r in robot.joint_ranges(a)]) - BOUND_MARGIN_RAD for a in Arm}
    start = {
        a: wave_around(np.clip(robot.home(a), lo[a], hi[a]), k, lo[a], hi[a])(2.0)
        for k, a in enumerate(Arm)
    }

    def waves(scale: float):
        return {a: wave_around(start[a], k, lo[a], hi[a], scale) for k, a in enumerate(Arm)}

    joints = {a.value: robot.joints(a) for a in Arm}
    full = first_wave_contact(
        robot.model(), joints, {a.value: s for a, s in waves(1.0).items()}, 2.0
    )
    assert full is not None and "mount" in full.other, full
    scale, sources = clear_wave(robot, waves, 2.0)
    assert scale == WAVE_SCALES[1] == -1.0
    assert np.allclose(sources[Arm.LEFT](0.7), waves(-1.0)[Arm.LEFT](0.7))
