"""Fuzz cases over the outward surfaces: every input a client, a file or a peer
can hand the project ends in a value or in that surface's typed error, never in another
exception. Under ``make test`` each property runs Hypothesis' default number of cases;
``make fuzz`` runs the same properties as a long seeded campaign (profile ``fuzz``).

Surfaces: the bank's control port, teleop frames, the socketcand stream and its commands,
plan files (certify), replay sidecars, study specs (TOML and JSON bytes, decoded objects)
and RobEnv actions. The bounded JSON reader they share has its own property in
``test_bounded_json.py``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from fuzz_support import JSONISH, NASTY
from fuzz_support import json_text as _json_text
from fuzz_support import mutated as _mutated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rob_twin.models.errors import RobTwinError

pytestmark = pytest.mark.fuzz
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# --- the bank's control port ---------------------------------------------------------


FAULT = {"kind": "drop", "arm": "right", "at": 0.5, "duration": 0.1, "probability": 0.3}


@FUZZ
@given(st.binary(max_size=300) | JSONISH.map(_json_text).map(str.encode))
def test_control_port_lines_are_a_command_or_a_control_error(line):
    from rob_twin.twin.bus.bank_control import ControlError, parse_control

    try:
        parse_control(line)
    except ControlError as err:
        assert err.reply()["ok"] is False


@FUZZ
@given(st.integers(0, 50), NASTY | JSONISH | st.just("<delete>"))
def test_control_port_faults_with_one_field_broken(pick, value):
    from rob_twin.twin.bus.bank_control import ControlError, parse_control

    line = _json_text(_mutated({"cmd": "fault", "fault": FAULT}, pick, value))
    try:
        command = parse_control(line)
    except ControlError:
        return
    if command.fault is not None:  # anything accepted is a fault the bank can schedule
        # (no duration given: until clear_faults, which is an infinite duration)
        assert math.isfinite(command.fault.at) and command.fault.duration > 0


# --- teleop frames ----------------------------------------------------------------------


FRAME = {
    "v": 1,
    "type": "input",
    "session": "s",
    "seq": 1,
    "t_ms": 1.0,
    "hands": {
        "right": {
            "tracked": True,
            "position": [0, 1, -0.3],
            "orientation": [0, 0, 0, 1],
            "grip": 0,
            "trigger": 0,
        }
    },
}


@FUZZ
@given(st.integers(0, 50), NASTY | JSONISH | st.just("<delete>"))
def test_teleop_frames_with_one_field_broken(pick, value):
    from rob_twin.twin.teleop.messages import TeleopMessageError, parse_message

    try:
        parse_message(_json_text(_mutated(FRAME, pick, value)))
    except TeleopMessageError:
        pass


@FUZZ
@given(st.text(max_size=300) | JSONISH.map(_json_text))
def test_teleop_arbitrary_text(text):
    from rob_twin.twin.teleop.messages import TeleopMessageError, parse_message

    try:
        parse_message(text)
    except TeleopMessageError:
        pass


# --- socketcand ---------------------------------------------------------------------------


@FUZZ
@given(st.lists(st.binary(max_size=80) | st.sampled_from([b"<", b">", b"< send 11 2 1 2 >"])))
def test_socketcand_stream_never_raises_and_counts_every_byte(chunks):
    from rob_twin.twin.bus.socketcand_protocol import (
        CommandStream,
        SocketcandCommandError,
        parse_command,
    )

    stream = CommandStream()
    messages = [m for chunk in chunks for m in stream.feed(chunk)]
    for text in messages:
        assert text.startswith("<") and text.endswith(">")
        try:
            parse_command(text)
        except SocketcandCommandError:
            pass
    assert stream.discarded_bytes >= 0


@FUZZ
@given(st.text(max_size=120).map(lambda t: f"< send {t} >"))
def test_socketcand_send_commands(text):
    from rob_twin.twin.bus.socketcand_protocol import SocketcandCommandError, parse_send

    try:
        msg = parse_send(text)
    except SocketcandCommandError:
        return
    assert 0 <= msg.arbitration_id < 2**29 and len(msg.data) <= 8


# --- plan files (certify) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def plan_doc():
    from rob_twin.models import keyframe_state
    from rob_twin.models.names import group_arms
    from rob_twin.planners import ArmGroup, JointGoal
    from rob_twin.planners.plan_file import plan_document

    model, home = keyframe_state("home")
    group = ArmGroup(model, group_arms())
    group.set_qpos(home)
    goals = {
        arm: JointGoal(group.arm_q(arm) + np.array([0.2, 0.1, 0.0, -0.2, 0.1, 0.0, 0.2]))
        for arm in ("right", "left")
    }
    plan = group.plan(goals, seed=0).unwrap()
    return json.loads(json.dumps(plan_document(group, plan)))


@FUZZ
@given(st.integers(0, 10_000), NASTY | JSONISH | st.just("<delete>"))
def test_plan_documents_with_one_field_broken(plan_doc, pick, value):
    from rob_twin.planners.plan_file import PlanFileError, validate_plan_document

    try:
        validate_plan_document(_mutated(plan_doc, pick, value))
    except PlanFileError:
        pass


@FUZZ
@given(JSONISH)
def test_plan_documents_of_any_shape(doc):
    from rob_twin.planners.plan_file import PlanFileError, validate_plan_document

    with pytest.raises(PlanFileError):
        validate_plan_document(doc)


# --- replay sidecars -------------------------------------------------------------------------

SIDECAR = {
    "hardware_io": False,
    "evidence_class": "simulated",
    "seed": 0,
    "physics_dt_s": 0.001,
    "start_time_s": 0.0,
    "feedback_rate_hz": 100.0,
    "frames": 10,
    "first_timestamp_s": 0.0,
    "end_time_s": 0.5,
}


@FUZZ
@given(st.integers(0, 20), NASTY | JSONISH | st.just("<delete>"))
def test_sidecars_with_one_field_broken(tmp_path, pick, value):
    from rob_twin.twin.bus.sidecar import validate_sidecar

    try:
        validate_sidecar(_mutated(SIDECAR, pick, value), tmp_path / "run.log")
    except RobTwinError as err:
        assert str(err)  # a typed error with a message (SidecarError or RecordingError)


# --- study specs --------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=400) | st.text(max_size=300).map(str.encode))
def test_study_spec_bytes_as_toml_and_json(data):
    from rob_twin.experiments.study.spec import StudySpecError, parse_spec, read_json, read_toml

    for read in (read_toml, read_json):
        try:
            raw = read(data, "fuzz spec")
            parse_spec(raw) if isinstance(raw, dict) else None
        except StudySpecError:
            pass


@FUZZ
@given(JSONISH)
def test_study_spec_objects_of_any_shape(raw):
    from rob_twin.experiments.study.spec import StudySpecError, parse_spec

    try:
        parse_spec(raw if isinstance(raw, dict) else {"spec": raw})
    except StudySpecError:
        pass


# --- RobEnv actions -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def env():
    from rob_twin.twin.env import EnvConfig, RobEnv

    env = RobEnv(EnvConfig(sensors=("commanded",)))
    env.reset(seed=0)
    yield env
    env.close()


ACTIONS = st.one_of(
    JSONISH,
    st.lists(st.floats() | st.integers() | st.text(max_size=3) | st.none(), max_size=20),
    st.integers(0, 20).flatmap(
        lambda n: st.sampled_from(["f8", "f4", "i8", "u1", "c16", "U3", "O", "?"]).map(
            lambda dt: np.zeros(n, dtype=dt)
        )
    ),
)


@FUZZ
@given(ACTIONS)
def test_env_actions_of_any_kind_step_or_raise_the_typed_error(env, action):
    from rob_twin.twin.env import EnvActionError

    try:
        env.step(action)
    except EnvActionError:
        pass
