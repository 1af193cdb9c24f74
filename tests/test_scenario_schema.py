"""The published scenario schema: generated from the pydantic models, in step with the
model's joints and cameras and with the fault runtime; every example scenario is valid."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rob_twin.models.loading import load_scene
from rob_twin.twin.scenario.run import Scenario
from rob_twin.twin.scenario.schema import (
    CAMERAS,
    FAULT_KINDS,
    FAULT_MODELS,
    OFFSCREEN_MAX,
    SCHEMA_PATH,
    ScenarioError,
    initial_joint_limits,
    schema_text,
    validate_faults,
)
from rob_twin.twin.sim.faults import FaultKind, FaultSpec

EXAMPLES = sorted(p for p in SCHEMA_PATH.parent.glob("*.json") if p != SCHEMA_PATH)


def test_the_committed_schema_is_the_generated_one():
    assert SCHEMA_PATH.read_text() == schema_text(), (
        "experiments/scenarios/scenario.schema.json is stale: "
        "python -m rob_twin.twin.scenario.schema --write"
    )


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_scenario_is_valid(path: Path):
    sc = Scenario.load(path)
    assert sc.name == path.stem
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(
        json.loads(path.read_text())
    )


def test_the_json_schema_refuses_what_the_models_refuse():
    jsonschema = pytest.importorskip("jsonschema")
    v = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    good = {
        "name": "ok",
        "duration": 1.0,
        "faults": [{"kind": "drop", "arm": "left", "probability": 0.2}],
    }
    assert not list(v.iter_errors(good))
    for bad in (
        {"duration": 1.0, "duraton": 2},
        {"duration": 1.0, "name": "../x"},
        {"duration": 1.0, "faults": [{"kind": "drop", "arm": "left", "probabilty": 0.2}]},
        {"duration": 1.0, "fps": 0},
        {"duration": 1.0, "seed": 1.5},
        [1],
        {"duration": 1.0, "initial": {"right/j9": 0.1}},
        {"duration": 1.0, "keyframes": [{"t": 0.1, "arm": "left", "q": [0.0, 0, 0, 3.0, 0, 0, 0]}]},
    ):
        assert list(v.iter_errors(bad)), bad


def test_initial_joint_limits_are_the_models_hinges_and_slides():
    m = load_scene()
    table = initial_joint_limits()
    scalar = {
        m.joint(i).name: tuple(m.jnt_range[i]) for i in range(m.njnt) if m.jnt_type[i] in (2, 3)
    }
    assert set(table) == set(scalar)
    for name, (lo, hi) in table.items():
        assert np.allclose((lo, hi), scalar[name]), name


def test_cameras_and_the_offscreen_buffer_are_the_models():
    m = load_scene()
    # plus "auto", the free camera framed from the arms (rob_twin.twin.render.framing)
    assert set(CAMERAS) == {"auto"} | {m.camera(i).name for i in range(m.ncam)}
    assert OFFSCREEN_MAX == (m.vis.global_.offwidth, m.vis.global_.offheight)


def test_every_fault_kind_has_a_model_with_the_runtime_defaults():
    assert set(FAULT_KINDS) == {k.value for k in FaultKind}
    for model in FAULT_MODELS:
        kind = model.model_fields["kind"].annotation.__args__[0]
        m = validate_faults([{"kind": kind, "arm": "left"}])[0]
        assert m.params() == FaultSpec(kind, "left").params, kind


def test_fault_lists_from_the_rehearse_command_use_the_same_checks():
    with pytest.raises(
        ScenarioError, match=r"faults\[0\]\.offset: unknown key \(did you mean 'offset_rad'\?\)"
    ):
        validate_faults([{"kind": "encoder_offset", "arm": "right", "offset": 0.1}], "--faults")
    with pytest.raises(ScenarioError, match="faults: must be a JSON list"):
        validate_faults({"kind": "drop"}, "--faults")


def test_schema_cli_check_flags_a_stale_file(tmp_path, monkeypatch):
    import rob_twin.twin.scenario.schema as schema

    stale = tmp_path / "scenario.schema.json"
    stale.write_text("{}\n")
    monkeypatch.setattr(schema, "SCHEMA_PATH", stale)
    assert schema.main(["--check"]) == 1
    assert schema.main(["--write"]) == 0 and schema.main(["--check"]) == 0
    assert json.loads(stale.read_text())["title"] == "rob-twin scenario"
