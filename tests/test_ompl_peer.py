"""OMPL as the planner benchmark's peer (experiments/ompl_peer.py, peer_compare.py): the
wrapper plans around an obstacle and checks every retimed sample, the bare MuJoCo check
agrees with the project's, and a reduced side-by-side run carries the OMPL rows and ratios.
The OMPL tests skip with the reason when ompl (the ``bench`` extra) is not installed."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.experiments import ompl_peer
from rob_twin.models.errors import InvalidValueError

needs_ompl = pytest.mark.skipif(
    ompl_peer.missing_reason() is not None, reason=str(ompl_peer.missing_reason())
)


def _blocked(q: np.ndarray) -> bool:
    """Free outside the block |x| < 0.3, y < 0.5 of the square [-1, 1]^2."""
    return not (abs(q[0]) < 0.3 and q[1] < 0.5)


@needs_ompl
@pytest.mark.parametrize("planner", ompl_peer.PLANNERS)
def test_plans_around_the_block_and_checks_every_sample(planner):
    seen = []

    def is_free(q):
        seen.append(np.array(q))
        return _blocked(q)

    lo, hi = np.full(2, -1.0), np.full(2, 1.0)
    start, goal = np.array([-0.8, -0.8]), np.array([0.8, -0.8])
    r = ompl_peer.plan_ompl(is_free, start, goal, lo, hi, 1.0, 2.5, planner, seed=0)
    assert r.ok, r.reason
    assert r.checks == len(seen)
    assert r.duration_s > 1.6  # the straight way is 1.6 rad long and blocked
    # the last checks are the retimed 125 Hz samples: over the block, ending at the goal
    samples = int(np.ceil(r.duration_s * 125.0)) + 1
    tail = np.array(seen[-samples:])
    assert np.allclose(tail[-1], goal, atol=1e-6)
    assert all(_blocked(q) for q in tail)
    assert max(q[1] for q in tail) >= 0.5


def test_unknown_planner_is_a_typed_error():
    with pytest.raises(InvalidValueError, match="planner"):
        ompl_peer.plan_ompl(_blocked, np.zeros(2), np.ones(2), -np.ones(2), np.ones(2), 1, 1, "PRM")


@needs_ompl
def test_bare_check_agrees_with_is_free_on_the_stand():
    from rob_twin.experiments.hard_problems import groups

    g = groups()["stand"]
    moving = tuple(g.arm_names)
    session = g.checker.session(moving, g.reference_qpos)
    bare = ompl_peer.BareCheck(session)
    lo = np.concatenate([g.joint_limits(a)[0] for a in moving])
    hi = np.concatenate([g.joint_limits(a)[1] for a in moving])
    qs = np.random.default_rng(3).uniform(lo, hi, (400, lo.size))
    verdicts = [(session.is_free(q), bare(q)) for q in qs]
    assert all(a == b for a, b in verdicts)
    assert 0 < sum(a for a, _ in verdicts) < len(qs)  # both kinds of state were met


@needs_ompl
def test_reduced_side_by_side_run_reports_ompl_rows_and_ratios():
    from rob_twin.experiments.bench_planner import peer_sets

    out = peer_sets(per_set=2, seeds=(0,))
    assert set(out) == {"hard_rob", "hard_stand", "study"}
    for row in out.values():
        assert row["requests"] == 2 and row["hardware_io"] is False
        assert row["ours"]["success"] == 2
        assert set(row["peers"]) == {
            f"ompl_{p}_{c}" for p in ompl_peer.PLANNERS for c in ("is_free", "bare")
        }
        for peer in row["peers"].values():
            assert 0 <= peer["success"] <= 2
            assert peer["success"] + sum(peer["failures"].values()) == 2
            assert peer["time_ompl_over_ours"]["ratio_of_medians"] > 0


def test_without_ompl_the_rows_say_why(monkeypatch):
    from rob_twin.experiments.hard_problems import groups, load
    from rob_twin.experiments.peer_compare import compare_set

    monkeypatch.setattr(ompl_peer, "missing_reason", lambda: "ompl not installed (test)")
    g = groups()["stand"]
    p = load("stand")[0]
    out = compare_set(g, [(p.start, p.goal, 0)], seeds=(0,))
    assert out["peers"] == {"skipped": "ompl not installed (test)"}
    assert out["ours"]["success"] == 1
