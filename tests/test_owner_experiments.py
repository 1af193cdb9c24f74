"""The owner experiments reproduce their headline figures (small sizes; files to tmp)."""

from __future__ import annotations

import pytest
import rob_twin.experiments.output as output
from rob_twin.controllers.owner_types import Mode
from rob_twin.experiments import (
    exp_extremum,
    exp_faults,
    exp_inconsistent_seed,
    exp_legacy_race,
    exp_replay,
)


@pytest.fixture(autouse=True)
def _tmp_out(tmp_path, monkeypatch):
    monkeypatch.setattr(output, "OUT_DIR", tmp_path)


def test_inconsistent_seed_reproduces_table():
    r = exp_inconsistent_seed.inconsistent_seed()
    assert r["hardware_io"] is False
    by = {(c["v0"], c["a0"]): c for c in r["cases"]}
    assert by[(0.2, 0.0)]["min_position_sampled"] == pytest.approx(0.34, abs=1e-6)
    assert by[(0.0, 0.0)]["min_position_exact"] == pytest.approx(0.34, abs=1e-6)
    bad = by[(0.0, -40.0)]
    assert bad["min_position_sampled"] == pytest.approx(-5.262596, abs=1e-5)
    assert bad["min_position_exact"] <= bad["min_position_sampled"]  # exact is never shallower


def test_short_replay_within_bounds_and_converges():
    r = exp_replay.run_replay(0, 60.0, duration_s=10.0, settle_s=5.0)
    assert r["samples"] == 2000 and r["targets"] == 600 and r["moving_retargets"] > 400
    for key, bound in exp_replay.BOUNDS.items():
        assert r[key] <= bound + 1e-9, key
    assert r["final_error"] < 1e-9 and r["faults"] == 0 and r["mailbox_balanced"]


def test_fault_matrix_and_legacy_race():
    f = exp_faults.faults()
    assert f["all_as_expected"] and f["max_frames_after"] == 0 and len(f["cases"]) == 11
    lr = exp_legacy_race.legacy_race()
    assert lr["legacy_stale_writes"] >= 2 and lr["owner_stale_writes"] == 0
    # both halves are observed: the legacy host's workers interleave, the owner's do not
    assert lr["legacy"]["stale_after_replacement"] >= 1 and lr["legacy"]["writers"] >= 3
    assert lr["owner"]["stale_after_replacement"] == 0 and lr["owner"]["writers"] == 1
    assert lr["owner"]["replacement_accepted"] and lr["owner"]["brake_frames_after_stop"] > 0


def test_superseded_publication_count_sees_an_old_command_after_its_replacement():
    assert exp_legacy_race.superseded_publications([None, 1, 1, 2, 2, 3]) == 0
    assert exp_legacy_race.superseded_publications([1, 1, 2, 1, 2]) == 1
    assert exp_legacy_race.superseded_publications([1, 2, 3, 1, 2]) == 2


def test_brake_case_counts_frames_that_keep_tracking_after_the_event():
    """A brake case whose event the owner ignores (nothing injected) reports the frames that
    kept tracking the old plan, and is not as expected."""
    ok = exp_faults._brake(
        "revoked", "lease revoked", lambda r: r.owner.revoke_authority(), Mode.HOLD
    )
    assert ok["as_expected"] and ok["frames_after"] == 0
    ignored = exp_faults._brake("nothing", "no event", lambda r: None, Mode.HOLD)
    assert not ignored["as_expected"] and ignored["frames_after"] > 0


def test_extremum_validation_small():
    r = exp_extremum.extremum(n_traj=6)
    assert r["joint_state_observations"] == 6 * 7 * 301
    assert r["samples_enclosed"] and r["max_state_mismatch"] < 1e-12
    zj = r["zero_jerk_case"]
    assert zj["p_max_exact"] == pytest.approx(0.25) and zj["t_p_max_s"] == pytest.approx(0.5)
    assert zj["endpoint_max"] == pytest.approx(
        0.0, abs=1e-15
    )  # the interior maximum beats both ends


def test_wire_replay_short_run_through_transport_and_bus():
    from rob_twin.controllers.codec import RAD_PER_COUNT
    from rob_twin.experiments.exp_wire_replay import run_wire_replay

    r = run_wire_replay(0, ticks=1200, settle_s=4.5)
    assert r["samples_published"] == 1200 and r["frames"] == 7 * 1200
    assert r["complete_samples"] == 1200 and r["faults"] == []
    assert r["max_quantization_error_rad"] < RAD_PER_COUNT
    assert r["max_wire_step_rad"] <= r["streaming_step_bound_rad"] + RAD_PER_COUNT
    assert r["moving_retargets"] > 50 and r["feedback_forwarded"] >= 100
    assert r["final_error_rad"] < 1e-6
