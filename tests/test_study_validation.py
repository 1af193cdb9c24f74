"""``rob-twin study`` refuses what cannot run before its first row (exit 2, field named, no
row written): a margin the planner refuses, a garbage model, an unknown keyframe, NaN
goals, a spec beyond the size caps, damaged spec files (UTF-8, nesting, huge integers).
A study with error rows, or where no row succeeds, exits 1 and its report and plots show
the errors as errors, never as 0 % / 0 ms. Tiny studies (a few rows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rob_twin.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "study"
TINY = {"name": "tiny", "margins_m": [0.005], "count": 1, "seed": 7}


def _study(tmp_path, spec: dict | str | bytes, *extra: str, suffix: str = ".json") -> int:
    path = tmp_path / f"spec{suffix}"
    if isinstance(spec, dict):
        spec = json.dumps(spec)
    path.write_bytes(spec if isinstance(spec, bytes) else spec.encode())
    return main(["study", str(path), "--out", str(tmp_path / "out"), "--no-progress", *extra])


def _refused(tmp_path, capsys, spec, text: str, suffix: str = ".json") -> str:
    assert _study(tmp_path, spec, suffix=suffix) == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err, err
    assert not (tmp_path / "out" / "rows.csv").exists()  # no row ran
    return err


def test_a_margin_the_planner_refuses_is_exit_2_naming_the_field(tmp_path, capsys):
    spec = {**TINY, "margins_m": [0.005, 0.02]}
    err = _refused(tmp_path, capsys, spec, "margins_m.1=0.02 is invalid")
    assert "clearance_horizon_m" in err
    # a longer horizon builds a 20 mm planner, but home is ~16.5 mm from collision: every
    # row at 20 mm would be start_in_collision, so the margin is still refused
    raised = {**spec, "planner": {"clearance_horizon_m": 0.04}}
    err = _refused(tmp_path, capsys, raised, "margins_m.1=0.02 is invalid; valid: < 0.01")
    assert "start keyframe 'home' is 16.5 mm from collision" in err


def test_every_shipped_study_spec_validates_whole():
    from rob_twin.experiments.study.preflight import preflight
    from rob_twin.experiments.study.spec import load_spec

    shipped = sorted((ROOT / "experiments" / "studies").glob("*.toml")) + sorted(
        (ROOT / "experiments" / "studies").glob("*.json")
    )
    assert shipped
    for path in shipped:
        spec, base = load_spec(path)
        est = preflight(spec, base, workers=2)
        assert est.rows == spec.count * len(spec.margins_m)


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"model": "garbage.xml"}, "model='garbage.xml' is invalid"),
        ({"start": "nowhere"}, "start='nowhere' is invalid; valid: a keyframe of the model"),
        ({"goals": {"kind": "file", "path": "nan_pairs.json"}}, "goals.path='nan_pairs.json'"),
    ],
)
def test_a_spec_that_cannot_run_any_row_is_exit_2(tmp_path, capsys, fields, text):
    (tmp_path / "garbage.xml").write_text("<mujoco><worldbody><geom ty")
    (tmp_path / "nan_pairs.json").write_text('[{"right": [NaN, 0, 0, 0, 0, 0, 0]}]')
    _refused(tmp_path, capsys, {**TINY, "arms": ["right"], **fields}, text)


def test_a_study_beyond_the_caps_is_refused_with_its_estimate(tmp_path, capsys):
    err = _refused(tmp_path, capsys, {**TINY, "count": 10**8}, "count x margins_m=100000000")
    assert "estimate: 100000000 rows" in err and "--force" in err


def test_force_runs_beyond_the_caps(tmp_path):
    from rob_twin.experiments.study import LocalBackend, run_study
    from rob_twin.experiments.study.preflight import StudyLimits, StudyTooLargeError
    from rob_twin.experiments.study.spec import parse_spec

    spec, small = parse_spec({**TINY, "count": 2}), StudyLimits(max_rows=1)
    with pytest.raises(StudyTooLargeError, match="<= 1 rows"):
        run_study(spec, DATA, tmp_path / "a", backend=LocalBackend(1), progress=False, limits=small)
    assert not (tmp_path / "a").exists()
    summary = run_study(
        spec,
        DATA,
        tmp_path / "b",
        backend=LocalBackend(1),
        progress=False,
        limits=small,
        force=True,
    )
    assert summary["finished"] == 2 and summary["estimate"]["rows"] == 2


@pytest.mark.parametrize(
    ("suffix", "data", "text"),
    [
        (".toml", b'name = "\xff\xfe"\ncount = 1\n', "encoding="),
        (".json", b'{"name": "\xff", "count": 1}', "encoding="),
        (".toml", b"name = 'x'\ncount = 1\nseed = " + b"[" * 5000 + b"]" * 5000, "depth=5000"),
        (".json", b'{"name": "x", "count": ' + b"[" * 5000 + b"]" * 5000 + b"}", "depth="),
        (".toml", b"name = 'x'\ncount = " + b"9" * 5000, "integer="),
        (".toml", b"name = 'x'\ncount = " + b"9" * 1000, "integer="),
        (".toml", b"name = 'x'\ncount = 0x" + b"f" * 40, "count="),
        (".json", b'{"name": "x", "count": ' + b"9" * 5000 + b"}", "integer="),
        (".toml", b"name = 'x'\nc = " + b"{a=" * 3000 + b"1" + b"}" * 3000, "depth="),
    ],
)
def test_damaged_spec_files_are_exit_2_without_a_traceback(tmp_path, capsys, suffix, data, text):
    _refused(tmp_path, capsys, data, text, suffix=suffix)


def test_a_study_with_error_rows_exits_1_and_shows_them_as_errors(tmp_path, capsys):
    # pairs.json: pair 0 plans, pair 1 is outside the joint limits (a row error)
    spec = {"name": "errs", "goals": {"kind": "file", "path": str(DATA / "pairs.json")}, "count": 2}
    assert _study(tmp_path, spec, "--json", "--workers", "1") == 1
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "errors" and out["errors"] == 1 and out["exit_code"] == 1
    (per,) = out["per_margin"]
    assert per["errors"] == 1 and per["success_rate"] == 1.0  # of the planned rows
    assert "error rows" in (tmp_path / "out" / "report.md").read_text()


def test_a_margin_where_every_row_raised_is_a_gap_with_its_errors_not_zero():
    from rob_twin.experiments.study.report import _per_margin, margin_series, verdict

    rows = [
        {"margin_m": 0.005, "status": "success", "plan_time_s": 0.01, "min_clearance_m": 0.01},
        {"margin_m": 0.02, "status": "error", "plan_time_s": None, "min_clearance_m": None},
    ]
    s = margin_series(_per_margin(rows, [0.005, 0.02]))
    assert s["success_pct"][0] == 100.0 and s["median_ms"][0] == 10.0
    assert s["errors"].tolist() == [0, 1]
    assert all(x != x for x in (s["success_pct"][1], s["median_ms"][1]))  # NaN: not 0 %, 0 ms
    assert verdict(rows) == "errors" and verdict(rows[1:]) == "all failed"
    assert verdict(rows[:1]) == "clean"


def test_a_study_whose_every_row_fails_exits_1(tmp_path, capsys):
    pairs = [{"right": [9.0, -1.22, -0.897, 1.576, 0.535, -0.018, -1.571]}]
    (tmp_path / "bad_pairs.json").write_text(json.dumps(pairs))
    spec = {"name": "bad", "arms": ["right"], "goals": {"kind": "file", "path": "bad_pairs.json"}}
    assert _study(tmp_path, {**spec, "count": 1}, "--workers", "1") == 1
    captured = capsys.readouterr()
    assert "all failed" in captured.err and "1/1 tasks" in captured.out


def test_every_study_option_has_help_with_its_default(capsys):
    with pytest.raises(SystemExit):
        main(["study", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    options = ["--out", "--workers", "--ray ", "--ray-timeout", "--resume", "--overwrite"]
    options += ["--replay", "--force", "--json", "--no-progress"]
    for option in options:
        assert option in text
    assert text.count("(default:") >= len(options)
    from rob_twin.experiments.study.preflight import default_config

    caps = default_config()
    assert f"{caps.max_rows:,} rows" in text and f"{caps.max_time_s / 3600:g} h" in text


def test_a_damaged_study_manifest_is_exit_2_without_a_traceback(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "study.json").write_text("[" * 100_000 + "]" * 100_000)
    assert _study(tmp_path, TINY, "--resume") == 2
    err = capsys.readouterr().err
    assert "depth=100000" in err and "Traceback" not in err
