"""The two-hands experiments, reduced: cross-arm latency (few trials) and held-skew (two skews,
ROB only); the middleware model's inputs. Files go to tmp."""

from __future__ import annotations

import json

import numpy as np
import pytest
import rob_twin.experiments.output as output
from rob_twin.cli.main import main
from rob_twin.experiments import exp_cross_arm_latency, exp_held_skew
from rob_twin.models.errors import UnknownNameError
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.middleware import MiddlewarePath, middleware


@pytest.fixture(autouse=True)
def _tmp_out(tmp_path, monkeypatch):
    for mod in (output, exp_cross_arm_latency, exp_held_skew):
        monkeypatch.setattr(mod, "OUT_DIR", tmp_path)


def test_cross_arm_latency_runs_through_the_cli_with_few_trials(capsys, tmp_path):
    assert main(["experiment", "cross-arm-latency", "--trials", "3", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["hardware_io"] is False and r["figures"] == "simulated"
    assert (tmp_path / "experiments" / "cross-arm-latency" / "result.json").exists()
    for robot in ("rob", "openarm"):
        res = r["robots"][robot]
        assert res["owner_faults"] == {} and res["stack"]["n"] >= 2, res
        stack, with_mw = res["latency_ms"]["stack"], res["latency_ms"]["with_middleware"]
        # the spike comes after the step left the host, and the middleware only adds delay
        assert res["from_publish"]["min_ms"] > 0
        assert all(w > s for s, w in zip(stack, with_mw, strict=True))
    assert r["middleware"]["name"] == "ros2_stock"


def test_trials_is_refused_for_an_experiment_that_does_not_take_it(capsys):
    assert main(["experiment", "codec", "--trials", "5", "--json"]) == 2
    assert "--trials" in json.loads(capsys.readouterr().out)["error"]


def test_a_47_ms_skew_loads_the_box_far_more_than_a_shared_start():
    r = exp_held_skew.run(skews_ms=(0.0, 47.0), robots=("rob",))
    assert r["hardware_io"] is False
    sync, late = r["rows"]
    assert sync["gate_passed"] and not late["gate_passed"]
    assert late["carry_peak_internal_n"] > 3 * sync["carry_peak_internal_n"]


def test_middleware_settings_and_bad_input():
    with pytest.raises(TwinInputError, match="cycle_s.*-0.01.*\\[0, 1\\] s"):
        MiddlewarePath(cycle_s=-0.01)
    with pytest.raises(UnknownNameError, match="'ros3'.*none, ros2_stock"):
        middleware("ros3")
    draws = [middleware("ros2_stock").command.draw(np.random.default_rng(i)) for i in range(200)]
    assert 0.0 < min(draws) and max(draws) < 0.0125  # 1 ms + U(0, 10 ms) + N(0, 0.3 ms)
