"""``rob-twin sweep``: scenarios compared with baselines, figures within tolerances, fault
outcomes exactly; a change is a regression with a table naming it (short dedicated
scenarios under tests/data/sweep/, without video)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rob_twin.cli.main import main
from rob_twin.experiments.sweep import SweepInputError, run_sweep
from rob_twin.experiments.sweep.figures import compare, flatten

SWEEP = Path(__file__).parent / "data" / "sweep"


def test_compare_allows_numbers_within_tolerance_and_texts_only_when_equal():
    tol = {"default": {"rel": 0.1, "abs": 0.0}, "pipeline.right": {"rel": 0.0, "abs": 0.0}}
    base = {
        "err": 1.0,
        "pipeline.right.frames_sent": 100,
        "pipeline.left.owner_fault": None,
        "gone": 1,
    }
    assert (
        compare(
            base,
            {
                "err": 1.09,
                "pipeline.right.frames_sent": 100,
                "pipeline.left.owner_fault": None,
                "gone": 1,
            },
            tol,
        )
        == []
    )
    changed = compare(
        base,
        {
            "err": 1.11,
            "pipeline.right.frames_sent": 101,
            "pipeline.left.owner_fault": "partial_output",
            "new": 2,
        },
        tol,
    )
    assert [c["figure"] for c in changed] == [
        "err",
        "gone",
        "new",
        "pipeline.left.owner_fault",
        "pipeline.right.frames_sent",
    ]
    assert changed[3]["allowed"] == "exact" and changed[3]["now"] == "partial_output"


def test_flatten_indexes_lists_and_leaves_wall_clock_figures_out():
    flat = flatten(
        {
            "wall_s": 3.0,
            "plans": [{"status": "success", "planning_s": 0.1, "arms": ["right"]}],
            "pipeline": {"left": {"bus": "CAN11@1.0", "owner_mode": "hold"}},
        }
    )
    assert flat == {
        "plans.0.status": "success",
        "plans.0.arms": ["right"],
        "pipeline.left.owner_mode": "hold",
    }


def test_sweep_passes_against_its_baselines_and_names_what_changed(tmp_path, capsys):
    report = run_sweep(SWEEP, out_dir=tmp_path / "ok", workers=2, progress=False)
    assert report["passed"] and report["hardware_io"] is False
    assert [r["verdict"] for r in report["rows"]] == ["ok", "ok"]

    changed = tmp_path / "changed"
    (changed / "baselines").mkdir(parents=True)
    shutil.copy(SWEEP / "partial_batch.json", changed)
    path = changed / "baselines" / "partial_batch.json"
    shutil.copy(SWEEP / "baselines" / "partial_batch.json", path)
    baseline = json.loads(path.read_text())
    baseline["figures"]["pipeline.left.owner_fault"] = None  # the fault no longer latches
    baseline["figures"]["max_abs_tracking_error_rad.right"] *= 2
    path.write_text(json.dumps(baseline))
    rc = main(["sweep", str(changed), "--workers", "1", "--out", str(tmp_path / "bad")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "REGRESSION" in out and "pipeline.left.owner_fault" in out and "partial_output" in out
    assert "max_abs_tracking_error_rad.right" in out
    result = json.loads((tmp_path / "bad" / "sweep.json").read_text())
    assert {c["figure"] for c in result["changes"]} == {
        "pipeline.left.owner_fault",
        "max_abs_tracking_error_rad.right",
    }


def test_a_scenario_without_baseline_or_that_cannot_run_is_a_regression(tmp_path):
    folder = tmp_path / "scen"
    folder.mkdir()
    shutil.copy(SWEEP / "reach.json", folder)
    (folder / "broken.json").write_text('{"name": "broken", "duration": -1}')
    report = run_sweep(folder, out_dir=tmp_path / "out", workers=1, progress=False)
    verdicts = {r["scenario"]: r["verdict"] for r in report["rows"]}
    assert not report["passed"] and verdicts == {"broken": "RUN FAILED", "reach": "NO BASELINE"}
    assert "duration" in next(c["now"] for c in report["changes"] if c["scenario"] == "broken")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SweepInputError, match="holds no"):
        run_sweep(tmp_path / "empty", out_dir=tmp_path / "x", progress=False)


def test_update_baselines_writes_what_the_next_sweep_then_passes_against(tmp_path):
    folder = tmp_path / "scen"
    folder.mkdir()
    shutil.copy(SWEEP / "reach.json", folder)
    out = str(tmp_path / "out")
    assert main(["sweep", str(folder), "--workers", "1", "--out", out, "--json"]) == 1
    rc = main(["sweep", str(folder), "--workers", "1", "--out", out, "--update-baselines"])
    written = json.loads((folder / "baselines" / "reach.json").read_text())
    assert rc == 0 and written["bus"] == "1M" and written["hardware_io"] is False
    assert written["figures"]["passed"] is True and "expect.failed_plans" not in written["figures"]
    assert main(["sweep", str(folder), "--workers", "1", "--out", out]) == 0
