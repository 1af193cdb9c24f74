"""Ruckig raises (instead of returning an error) on some inputs: the owner fails closed."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.controllers.owner_types import FaultKind, Mode
from ruckig import InputParameter, OutputParameter, Ruckig, RuckigError
from test_owner_support import Rig

# Seen on a real-time host after a Stop finished braking (float residue of v and a)
RESIDUE_V = [
    1.061533499140137e-17,
    -2.775557561562891e-17,
    7.664180442043875e-19,
    3.989863994746656e-17,
    8.153200337090993e-17,
    8.635296477673816e-17,
    -5.627756927546221e-17,
]
RESIDUE_A = [
    5.551115123125783e-17,
    0,
    4.440892098500626e-16,
    0,
    0,
    -2.220446049250313e-16,
    -4.440892098500626e-16,
]
POSE = [
    1.321874765507642,
    -1.261048686351768,
    -1.128242818409555,
    1.841485256189658,
    0.3715203899863501,
    0.006389735846113298,
    -1.319112420489821,
]


def _hold_input(v, a) -> InputParameter:
    inp = InputParameter(7)
    inp.current_position, inp.current_velocity, inp.current_acceleration = POSE, v, a
    inp.target_position = POSE
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [1.0] * 7, [3.0] * 7, [30.0] * 7
    return inp


def test_ruckig_raises_on_a_hold_with_float_residue_and_not_on_exact_zeros():
    otg, out = Ruckig(7, 0.005), OutputParameter(7)
    with pytest.raises(RuckigError):
        otg.update(_hold_input(RESIDUE_V, RESIDUE_A), out)
    otg.update(_hold_input([0.0] * 7, [0.0] * 7), out)


def test_a_finished_brake_continues_from_exact_zeros():
    rig = Rig()
    rig.submit(0.7)
    rig.step(150)
    rig.owner.stop()
    reps = rig.step(300)
    assert reps[-1].mode is Mode.STOPPED
    _, v, a = rig.owner.commanded_state()
    assert np.all(v == 0.0) and np.all(a == 0.0)
    assert rig.owner.fault is None


def test_a_raising_planner_latches_planner_error_instead_of_escaping_the_tick():
    rig = Rig()
    rig.submit(0.3)
    rig.step(5)

    class Raising:
        def update(self, inp, out):
            raise RuckigError("[ruckig] error in step 2 in dof: 5")

    rig.owner._otg = Raising()
    rep = rig.step(1)[0]
    assert rig.owner.fault is FaultKind.PLANNER_ERROR and not rep.published
    assert "ruckig raised" in rig.owner.fault_reason and "step 2" in rig.owner.fault_reason
