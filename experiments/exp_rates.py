"""The rates experiment: target input at 20-120 Hz, a burst and concurrent submissions.

Simulated (hardware_io false).
"""

from __future__ import annotations

import threading

from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.experiments.exp_replay import MOTION_FIGURES, run_replay
from rob_twin.experiments.output import markdown_table, write_experiment
from rob_twin.experiments.owner_rig import experiment_rig
from rob_twin.experiments.registry import experiment


def _burst(n: int = 1000) -> int:
    rig = experiment_rig()
    rig.step(2)
    for k in range(n):
        rig.submit(0.001 * (k % 100))
    return sum(r.new_plan for r in rig.step(5))


def concurrent_submissions(n_total: int = 100_000, n_threads: int = 8) -> dict:
    rig = experiment_rig(OwnerConfig(require_feedback=False))
    per = [
        [rig.target(0.001 * (s % 100), seq=s) for s in range(i + 1, n_total + 1, n_threads)]
        for i in range(n_threads)
    ]
    start = threading.Barrier(n_threads)

    def worker(batch):
        start.wait()
        for t in batch:
            rig.owner.submit(t)

    ths = [threading.Thread(target=worker, args=(b,)) for b in per]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    c = rig.owner.mailbox_counts()
    plans = sum(r.new_plan for r in rig.step(3))
    return {
        "submitted": c.submitted,
        "threads": n_threads,
        "accepted": c.accepted,
        "replaced": c.replaced,
        "rejected": c.rejected_by_reason,
        "pending_slots": c.pending,
        "balanced": c.balanced,
        "plans_after": plans,
    }


@experiment("rates")
def rates(seed: int = 0) -> dict:
    """Target input at 20/60/90/120 Hz (20 s each), the 1,000-target burst, 100,000 concurrent."""
    per_rate = [
        run_replay(seed, hz, duration_s=20.0, settle_s=6.0) for hz in (20.0, 60.0, 90.0, 120.0)
    ]
    conc = concurrent_submissions()
    result = {
        "experiment": "rates",
        "seed": seed,
        "per_rate": per_rate,
        "burst_targets": 1000,
        "burst_plans": _burst(1000),
        "concurrent": conc,
        "concurrent_pending_slots": conc["pending_slots"],
    }
    cols = ["rate_hz", "targets", "plans", *MOTION_FIGURES]
    md = (
        markdown_table(per_rate, cols) + f"\nburst of 1,000 -> {result['burst_plans']} plan(s); "
        f"100,000 concurrent -> {conc['pending_slots']} pending slot(s), "
        f"balanced={conc['balanced']}\n"
    )
    return write_experiment("rates", result, md)
