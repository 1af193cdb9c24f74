"""Benchmark ``scale`` (``make bench`` -> out/bench/scale.json): study throughput for one
process, every local core and a local Ray on the same goal pairs (rows compared row for
row), Ray's overhead per task, and the example scenarios' sweep wall time serial vs
parallel. Simulated planner on this machine; hardware_io: false.

Two throughputs per backend: ``plans_per_s`` over the whole run (worker start-up and model
builds included) and ``steady_plans_per_s`` once every worker has returned its first row
(rows after the first ``workers`` over the time they took). Overhead per task, steady:
``steady time * workers / steady rows - mean task time``: the time a worker slot spends on
a task beyond running it (scheduling, transport, result handling).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from rob_twin.experiments.registry import benchmark
from rob_twin.experiments.study.backends import LocalBackend, RayBackend, default_workers
from rob_twin.experiments.study.runner import comparable, run_study
from rob_twin.experiments.study.spec import parse_spec
from rob_twin.experiments.study.store import read_rows
from rob_twin.experiments.sweep import run_sweep

OUT = Path("out") / "bench" / "scale"


class _ArrivalTimes:
    """A backend wrapper noting when each row arrives [s after start]."""

    def __init__(self, inner):
        self.inner, self.label, self.times_s, self.rows = inner, inner.label, [], []

    def run(self, ctx, tasks, on_row):
        t0 = time.perf_counter()

        def noted(row):
            self.times_s.append(time.perf_counter() - t0)
            self.rows.append(row)
            on_row(row)

        self.inner.run(ctx, tasks, noted)


SCENARIOS = Path(__file__).parent / "scenarios"


def _measure(spec, backend, name: str, workers: int) -> tuple[dict, list[dict]]:
    out = OUT / name
    timed = _ArrivalTimes(backend)
    t0 = time.perf_counter()
    summary = run_study(spec, OUT, out, backend=timed, overwrite=True, progress=False)
    wall_s = time.perf_counter() - t0
    rows = read_rows(out / "rows.csv")
    task_s = statistics.fmean(r["task_time_s"] for r in rows)
    seen: set = set()
    warm = [
        r for r in timed.rows if r["worker"] in seen or seen.add(r["worker"])
    ]  # not a worker's first
    warm_task_s = statistics.fmean(r["task_time_s"] for r in warm)
    steady_rows = len(rows) - workers
    steady_s = timed.times_s[-1] - timed.times_s[workers - 1]
    return {
        "backend": summary["backend"],
        "workers": workers,
        "tasks": len(rows),
        "wall_s": round(wall_s, 3),
        "plans_per_s": round(len(rows) / wall_s, 3),
        "mean_task_s": round(task_s, 5),
        "mean_warm_task_s": round(warm_task_s, 5),
        "mean_plan_s": round(
            statistics.fmean(r["plan_time_s"] for r in rows if r["plan_time_s"]), 5
        ),
        "first_rows_s": round(timed.times_s[workers - 1], 3),
        "steady_plans_per_s": round(steady_rows / steady_s, 3),
        "steady_overhead_per_task_s": round(steady_s * workers / steady_rows - warm_task_s, 5),
        "statuses": summary["statuses"],
    }, rows


def cost_on_paper(
    plan_s: float, pairs: float = 1e6, nodes=(1, 10, 100), cores: int = 32, efficiency: float = 0.85
) -> dict:
    """Core-hours and wall time of ``pairs`` plans at ``plan_s`` each on nodes of ``cores``."""
    core_h = pairs * plan_s / 3600
    return {
        "pairs": pairs,
        "per_plan_s": plan_s,
        "core_hours": round(core_h, 1),
        "assumed_cores_per_node": cores,
        "assumed_efficiency": efficiency,
        "wall_h_by_nodes": {str(n): round(core_h / (n * cores * efficiency), 3) for n in nodes},
    }


@benchmark("scale")
def run(pairs: int = 200) -> dict:
    import ray

    cores = default_workers()
    spec = parse_spec({"name": "scale", "count": pairs, "margins_m": [0.005], "seed": 0})
    one, rows_one = _measure(spec, LocalBackend(1), "one", 1)
    local, rows_local = _measure(spec, LocalBackend(cores), "local", cores)
    t0 = time.perf_counter()
    ray.init(
        num_cpus=cores, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False
    )
    ray_start_s = time.perf_counter() - t0
    try:
        on_ray, rows_ray = _measure(spec, RayBackend(workers=cores), "ray", cores)
    finally:
        ray.shutdown()
    on_ray["ray_startup_s"] = round(ray_start_s, 3)
    base = [comparable(r) for r in rows_one]
    mismatches = {
        name: sum(a != comparable(b) for a, b in zip(base, rows, strict=True))
        for name, rows in (("local", rows_local), ("ray", rows_ray))
    }
    sweep = {}
    for label, workers in (("serial", 1), ("parallel", cores)):
        t0 = time.perf_counter()
        rep = run_sweep(SCENARIOS, out_dir=OUT / f"sweep_{label}", workers=workers, progress=False)
        sweep[label] = {
            "workers": workers,
            "wall_s": round(time.perf_counter() - t0, 3),
            "passed": rep["passed"],
            "scenarios": rep["scenarios"],
        }
    speedup = local["steady_plans_per_s"] / one["steady_plans_per_s"]
    return {
        "machine_cores": cores,
        "pairs": pairs,
        "one_worker": one,
        "all_cores": local,
        "local_ray": on_ray,
        "identical_rows": all(v == 0 for v in mismatches.values()),
        "row_mismatches": mismatches,
        "speedup_all_cores": round(speedup, 3),
        "speedup_per_core": round(speedup / cores, 3),
        "speedup_all_cores_whole_run": round(local["plans_per_s"] / one["plans_per_s"], 3),
        "ray_overhead_fraction_of_plan": round(
            on_ray["steady_overhead_per_task_s"] / on_ray["mean_warm_task_s"], 3
        ),
        "sweep_examples": sweep,
        "sweep_speedup": round(sweep["serial"]["wall_s"] / sweep["parallel"]["wall_s"], 3),
        "cost_1e6_pairs": cost_on_paper(one["mean_warm_task_s"]),
        "note": "simulated planner figures on this machine "
        "(shared with other jobs while measured); "
        "speedups are steady-state (after each worker's first row)",
    }
