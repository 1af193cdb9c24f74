"""The held box: weld grasps in physics, the forces each hand puts on it, payload shares, and
the ``held_object`` gate (a synchronized carry passes; a skewed one and a slipping grasp fail)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from rob_twin.models.loading import load_scene
from rob_twin.models.names import Arm, UnknownNameError
from rob_twin.twin.bus.timing import BusTimingConfig
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.rehearsal.gates import GATES, RehearsalConfig
from rob_twin.twin.rehearsal.held_gate import HeldGateConfig, gate_held_object
from rob_twin.twin.scenario.run import Scenario, run_scenario
from rob_twin.twin.scenario.schema import ScenarioError
from rob_twin.twin.scenario.verdict import unexpected
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.damiao_loop import DamiaoClosedLoop, openarm_config
from rob_twin.twin.sim.held_carry import ClosedChainError, carry_plan, chain_deviation
from rob_twin.twin.sim.held_object import HeldBoxConfig, HeldObject, held_scene
from rob_twin.twin.sim.held_record import HeldObjectLimits
from rob_twin.twin.sim.twin import Twin, TwinConfig

G = 9.81


@pytest.fixture(scope="module")
def model():
    return held_scene("rob", HeldBoxConfig(mass_kg=2.0))


def _held(model):
    twin = Twin(TwinConfig(), model=model)  # servos held at home, no owners
    return twin, HeldObject(twin.model, twin.data, HeldBoxConfig(mass_kg=2.0))


def test_stand_holds_then_hands_share_the_weight_then_release_drops_it(model):
    twin, box = _held(model)
    start = box.box_position()
    twin.run_for(0.2)
    assert box.on_stand and box.holding == ()
    assert np.linalg.norm(box.box_position() - start) < 2e-3
    box.grasp(["right", "left"])
    twin.run_for(0.3)
    f = box.weld_forces()
    assert not box.on_stand and box.holding == (Arm.RIGHT, Arm.LEFT)
    assert (f[Arm.RIGHT] + f[Arm.LEFT])[2] == pytest.approx(2.0 * G, rel=0.05)
    for arm in Arm:
        assert f[arm][2] == pytest.approx(G, rel=0.2)  # each hand about half of 2 kg
    box.release("left")
    twin.run_for(0.3)
    f = box.weld_forces()
    assert list(f) == [Arm.RIGHT] and f[Arm.RIGHT][2] == pytest.approx(2.0 * G, rel=0.05)
    assert box.wrench().internal_n.tolist() == [0.0, 0.0, 0.0]  # one hand: nothing cancels
    z = box.box_position()[2]
    box.release()
    twin.run_for(0.3)
    assert box.box_position()[2] < z - 0.1  # nothing holds it: it falls


def test_bad_input_is_refused_and_changes_nothing(model):
    twin, box = _held(model)
    before = twin.data.eq_active.copy()
    with pytest.raises(UnknownNameError, match="'middle'; valid: right, left"):
        box.grasp(["right", "middle"])
    assert np.array_equal(twin.data.eq_active, before)
    with pytest.raises(TwinInputError, match="mass_kg.*-1.0.*\\(0, 50\\] kg"):
        HeldBoxConfig(mass_kg=-1.0)
    with pytest.raises(TwinInputError, match="held_scene"):
        plain = load_scene()
        HeldObject(plain, mujoco.MjData(plain))


def test_grasp_shares_the_box_as_payload_of_the_damiao_gravity_compensation():
    cfg = HeldBoxConfig(mass_kg=1.5)
    twin = Twin(TwinConfig(), model=held_scene("openarm", cfg))
    with DamiaoClosedLoop(openarm_config(), twin=twin) as loop:
        box = HeldObject(twin.model, twin.data, cfg, loop.gravity)
        assert all(g.payload is None for g in loop.gravity.values())
        box.grasp()
        assert [loop.gravity[a].payload.mass_kg for a in Arm] == [0.75, 0.75]
        box.release("right")
        assert loop.gravity[Arm.RIGHT].payload is None
        assert loop.gravity[Arm.LEFT].payload.mass_kg == 1.5


def test_held_object_gate_is_registered():
    assert "held_object" in GATES


def test_synchronized_carry_passes_the_gate_on_the_first_carry_the_planner_allows():
    """A first carry 0.5 m down, which the planner refuses, is named in the report; the gate
    runs the next one and judges it."""
    held = HeldGateConfig(translation_m=(0.0, 0.0, -0.5), other_translations_m=((0.05, 0.0, 0.1),))
    res = gate_held_object(RehearsalConfig(), held)
    assert res.passed, res.detail
    assert res.figures["peak_internal_force_n"] < 10.0 and res.figures["held_s"] > 2.0
    assert res.figures["carry_m"] == [0.05, 0.0, 0.1] and res.figures["carry_s"] > 0.5
    (refused,) = res.figures["carries_refused"]
    assert refused.startswith("carry [0.0, 0.0, -0.5] m not planned")


def test_a_skew_that_overloads_the_box_fails_the_gate():
    limits = HeldObjectLimits(internal_force_n=8.0)
    sync = gate_held_object(RehearsalConfig(), HeldGateConfig(limits=limits))
    skew = gate_held_object(RehearsalConfig(), HeldGateConfig(limits=limits, skew_s=0.047))
    assert sync.passed, sync.detail
    assert sync.figures["carry_m"] == [0.05, 0.0, 0.1] and sync.figures["carries_refused"] == []
    assert not skew.passed and "internal force" in skew.detail
    assert skew.figures["peak_internal_force_n"] > 2 * sync.figures["peak_internal_force_n"]


def test_a_grasp_that_slips_fails_the_gate():
    weak = HeldGateConfig(box=HeldBoxConfig(grip_force_n=1.0))  # capacity 2.4 N < 4.9 N load
    res = gate_held_object(RehearsalConfig(), weak)
    assert not res.passed and "grasp slips" in res.detail
    assert res.figures["slips"]["right"]["slipped"] and res.figures["slips"]["left"]["slipped"]


def test_openarm_enables_its_drives_through_a_timed_can_fd_bus():
    # bring-up used to exchange its register frames without letting simulated time pass, so
    # with bus timing on no reply ever arrived and both owners latched drive_error. Its burst
    # (7 register reads per drive, 49 frames) needs queues deeper than the defaults (10 host,
    # 3 per drive; 16 per drive still loses one): with those it fails by lost replies (reported,
    # not fixed here)
    bus = BusTimingConfig(
        frame_format="fd", data_bitrate_bps=5e6, host_queue_frames=64, drive_queue_frames=32
    )
    with DamiaoClosedLoop(openarm_config(bus_timing=bus)) as loop:
        assert all(loop.bring_up[a].passed for a in Arm), loop.bring_up
        loop.run_for(0.1)
        assert [d.owner.fault for d in loop.drivers.values()] == [None, None]


def test_scenario_grasps_need_a_held_object():
    with pytest.raises(ScenarioError, match="grasps: grasps and carries need a held_object"):
        Scenario.from_dict({"duration": 1.0, "grasps": [{"t": 0.1, "action": "grasp"}]})


def test_a_skewed_carry_in_a_scenario_fails_its_run_on_the_held_object_verdict(tmp_path):
    sc = Scenario.from_dict(
        {
            "name": "skewed_carry",
            "duration": 2.6,
            "held_object": {"max_internal_force": 8.0},
            "grasps": [{"t": 0.2, "action": "grasp"}],
            "carries": [{"t": 0.4, "translate": [0.05, 0.0, 0.10], "skew_ms": 47.0}],
        }
    )
    result = run_scenario(sc, tmp_path, record=False, progress=False)
    problems = unexpected(result, sc.expect)
    assert any(p.startswith("held_object: internal force") for p in problems), problems
    assert result.held["steps"][1]["skew_ms"] == 47.0 and result.held["held_s"] > 2.0
    assert (tmp_path / "held_object.png").exists()


def test_a_carry_plan_keeps_the_closed_chain_or_is_refused():
    with ClosedLoop(ClosedLoopConfig()) as loop:  # planning only: the owners at home
        plan = carry_plan(loop, [0.05, 0.0, 0.10])
        dp, dr = chain_deviation(plan)
        assert dp < 1e-4 and dr < 1e-3  # both TCPs on one time law: the box sees no squeeze
        with pytest.raises(ClosedChainError, match="mm.*mrad.*<= 1e-06 mm"):
            carry_plan(loop, [0.05, 0.0, 0.10], tolerance=(1e-9, 1.0))


def test_the_planner_checks_the_held_box_against_the_world():
    # before: carries were planned on the scene without the box, so a carry that lowers
    # the box into the table was planned (the hands stay clear of it) and executed
    from rob_twin.planners.errors import PlanFailedError
    from rob_twin.twin.sim.held_carry import PLANNED_BOX, held_planning_model
    from rob_twin.twin.sim.held_object import held_closed_loop

    loop, held = held_closed_loop(ClosedLoopConfig())
    with loop:
        free = held_planning_model("rob", loop.twin.model, loop.twin.data)
        assert mujoco.mj_name2id(free, mujoco.mjtObj.mjOBJ_GEOM, PLANNED_BOX) < 0  # not held
        held.grasp(["right", "left"])
        loop.run_for(0.05)
        carry_plan(loop, [0.0, 0.0, -0.1])  # clear of the table
        with pytest.raises(PlanFailedError, match=r"held/box_in_hand vs table/top"):
            carry_plan(loop, [0.0, 0.0, -0.25])


def test_the_derived_box_is_fitted_to_a_robot_whose_links_crowd_it(tmp_path):
    """Generated robot 3 (Amber, facing): the 0.12 x 0.744 x 0.10 m box between its hands
    at home cut 0.9 mm into its left wrist link; the fitted box clears every link but the
    hands by the fitting clearance, keeps the width between the grasp points, is thinner."""
    from rob_twin.experiments.robot_factory import generate_robot
    from rob_twin.models.robot_model import compile_quietly, robot_spec
    from rob_twin.twin.sim import held_object as H

    made = generate_robot(tmp_path, 3, family="amber", joints=7, mounting="facing")
    m = held_scene(str(made.robot_file))
    x, y, z = (2.0 * float(v) for v in m.geom(H.BOX).size)
    assert y == pytest.approx(0.744, abs=1e-3)
    assert x < H.DEFAULT_SIZE_M[0] and z < H.DEFAULT_SIZE_M[2]

    spec = robot_spec(str(made.robot_file))
    base = compile_quietly(spec)
    centre = m.body(H.BOX).pos.copy()
    fitted = HeldBoxConfig(size_m=(x, y, z))
    clearance, _ = H.box_clearance(spec, fitted, centre, base)
    assert clearance >= H.FIT_CLEARANCE_M
    crowded = HeldBoxConfig(size_m=(H.DEFAULT_SIZE_M[0], y, H.DEFAULT_SIZE_M[2]))
    assert H.box_clearance(spec, crowded, centre, base)[0] < H.FIT_CLEARANCE_M
