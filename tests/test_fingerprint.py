"""The behaviour fingerprint: repeatable, strips wall-clock fields, and its compare mode finds
a perturbed figure (simulated figures; hardware_io: false)."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rob_twin.experiments import fingerprint as fp

ROOT = Path(__file__).resolve().parent.parent
FAST = ["model_geoms", "codec_amber", "codec_damiao", "owner_run"]


@pytest.fixture(scope="module")
def first():
    return fp.fingerprint(FAST)


def _write(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / fp.FILE_NAME).write_text(json.dumps(data))
    return folder


def _keys(x, out: set) -> set:
    if isinstance(x, dict):
        for k, v in x.items():
            out.add(k)
            _keys(v, out)
    elif isinstance(x, list):
        for v in x:
            _keys(v, out)
    return out


def test_groups_run_and_repeat_in_one_process(first):
    assert set(first["groups"]) == set(FAST)
    for name in FAST:
        assert "figures" in first["groups"][name], first["groups"][name]
    again = fp.fingerprint(FAST)
    assert again["groups"] == first["groups"]


def test_fresh_interpreter_gives_the_same_figures(first, tmp_path):
    out = tmp_path / "fp"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rob_twin.experiments.fingerprint",
            "--out",
            str(out),
            "--only",
            *FAST,
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    fresh = json.loads((out / fp.FILE_NAME).read_text())
    assert fresh["meta"]["planners.__file__"].startswith(str(ROOT))
    for name in FAST:
        assert fresh["groups"][name]["sha256"] == first["groups"][name]["sha256"], name


def test_compare_names_a_perturbed_figure_and_its_size(first, tmp_path):
    a = _write(tmp_path / "a", first)
    b_data = copy.deepcopy(first)
    sizes = b_data["groups"]["model_geoms"]["figures"]["geom_size"]
    sizes["values"][3] += 4.9e-8
    sizes["sha256"] = "perturbed"
    b_data["groups"]["model_geoms"]["sha256"] = "perturbed"
    b = _write(tmp_path / "b", b_data)

    text = io.StringIO()
    summary = fp.compare(str(a), str(b), out=text)
    assert summary["any_difference"]
    assert set(summary["identical"]) == set(FAST) - {"model_geoms"}
    d = summary["differs"]["model_geoms"]
    assert d["keys"] == ["geom_size"]
    assert d["max_abs_diff"] == pytest.approx(4.9e-8, rel=1e-6)
    assert "model_geoms" in text.getvalue() and "DIFFERS" in text.getvalue()

    assert fp.main(["--compare", str(a), str(b)]) == 1
    assert fp.main(["--compare", str(a), str(a)]) == 0


def test_compare_counts_a_group_that_stopped_running(first, tmp_path):
    a = _write(tmp_path / "a", first)
    b_data = copy.deepcopy(first)
    b_data["groups"]["owner_run"] = {
        "unavailable": "ModuleNotFoundError: rob_twin.controllers.owner"
    }
    b = _write(tmp_path / "b", b_data)
    summary = fp.compare(str(a), str(b), out=io.StringIO())
    assert "owner_run" in summary["availability_changed"] and summary["any_difference"]


def test_wall_clock_and_host_fields_are_stripped(first):
    raw = {
        "wall_s": 1.5,
        "physics_wall_s": 0.2,
        "written_utc": "2026-01-01T00:00:00Z",
        "python": "3.11",
        "cpu_s": 3.0,
        "compute_s": 1e-5,
        "stage_times_s": {"search": 0.1},
        "where": "/tmp/x/y/out.json",
        "bus": "CAN11@8234.1",
        "frames": 7,
        "duration_s": 1.0,
        "ruckig_position_extrema_worst_gap_rad": 0.85,
        "host_queue_frames": 3,
    }
    kept = ("frames", "duration_s", "ruckig_position_extrema_worst_gap_rad", "host_queue_frames")
    assert fp.canon(raw) == {"where": "<path>", "bus": "CAN11@<run>", **{k: raw[k] for k in kept}}
    # an experiment's stamped result: the machine facts the stamp adds are gone
    from rob_twin.experiments.output import stamp

    stamped = stamp({"frames_after": 0, "wall_s": 0.25})
    assert "written_utc" in stamped and "python" in stamped
    assert set(fp.canon(stamped)) == set(stamped) - {"written_utc", "python", "wall_s"}
    keys = _keys(first["groups"], set())
    assert not {k for k in keys if fp.STRIP_KEYS.search(k)}


def test_a_group_that_cannot_run_reports_why(monkeypatch):
    def broken():
        raise fp.Unavailable("no module of twin.model.loading")

    monkeypatch.setattr(fp, "_groups", [("broken", broken)])
    out = fp.fingerprint()
    assert out["groups"] == {
        "broken": {"unavailable": "Unavailable: no module of twin.model.loading"}
    }


def test_diff_reports_signed_zeros_and_largest_gap():
    import numpy as np

    a = fp.canon({"axis": np.array([0.0, 1.0]), "size": np.array([0.1, 0.2])})
    b = fp.canon({"axis": np.array([-0.0, 1.0]), "size": np.array([0.1, 0.2 + 3e-8])})
    d = dict(fp.diff(a, b))
    assert d["axis (equal values, 1 signed zeros differ)"] == 0.0
    assert d["size"] == pytest.approx(3e-8, rel=1e-6)
    assert fp.diff(a, fp.canon({"axis": np.array([0.0, 1.0]), "size": np.array([0.1, 0.2])})) == []
