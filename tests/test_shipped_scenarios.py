"""Every shipped scenario passes on the default simulated bus, and its baseline is current.

Each scenario in ``experiments/scenarios`` runs once, whole (2-8 s simulated, a few seconds of
wall time each), the way ``rob-twin sweep`` runs it: on the default bus of ``rob-twin run``
(classic CAN at 1 Mbit/s), judged against its own ``expect``. The run must pass, and its
figures must match ``baselines/NAME.json`` within the baseline's tolerances: a baseline that
no longer describes what the scenario does is stale, and ``rob-twin sweep
experiments/scenarios --update-baselines`` is how it changes (once ``bus_faults`` died on
the default bus; the ``crossing_plan`` baseline was stale on a fresh clone).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rob_twin.experiments.sweep.figures import compare
from rob_twin.experiments.sweep.runner import (
    DEFAULT_BUS,
    read_baseline,
    run_one,
    scenario_files,
)

SHIPPED = Path(__file__).resolve().parents[1] / "experiments" / "scenarios"
FILES = scenario_files(SHIPPED)


def test_the_sweep_runs_on_the_default_bus_of_run():
    from rob_twin.cli.main import build_parser

    run = build_parser().parse_args(["run", "x.json"])
    assert run.bus == DEFAULT_BUS


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_shipped_scenario_passes_on_the_default_bus_and_matches_its_baseline(path, tmp_path):
    result = run_one(str(path), str(tmp_path))
    assert "error" not in result, result.get("error")
    figures = result["figures"]
    assert figures["status"] == "completed"
    assert figures["passed"] is True, figures["unexpected"]
    baseline = read_baseline(SHIPPED / "baselines" / f"{result['name']}.json")
    assert baseline is not None, f"no baseline for {result['name']}"
    changes = compare(baseline["figures"], figures, baseline.get("tolerances", {}))
    assert changes == [], (
        f"baseline of {result['name']} is stale (rob-twin sweep experiments/scenarios "
        f"--update-baselines, if the change is intended): {changes}"
    )
