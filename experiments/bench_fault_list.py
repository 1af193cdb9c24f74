"""Benchmark: a 0.2 s scenario with a long fault list (simulated run, wall-time figures).

Loading (JSON + schema validation) and running are timed for lists of 0 .. 1 000 faults
(the scenario format's cap, ``schema.MAX_FAULTS``), each fault a short ``drop`` window on one
arm. ``scan_run_s`` runs the same list through a schedule that scans every fault on every
query (how the schedule worked before its time index), to show what the index saves;
``refused_load_s`` times the refusal of a list 100 times the cap (it must fail at once).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from rob_twin.experiments.registry import benchmark
from rob_twin.twin.scenario import run as scenario_module
from rob_twin.twin.scenario.run import Scenario, run_scenario
from rob_twin.twin.scenario.schema import MAX_FAULTS, ScenarioError
from rob_twin.twin.sim.faults import FaultSchedule

SIZES = (0, 100, MAX_FAULTS)
SCAN_SIZES = SIZES
OVER_CAP = 100 * MAX_FAULTS
DURATION_S = 0.2


def fault_list(n: int) -> list[dict]:
    """``n`` drop windows of 1 us spread over the run, alternating arms."""
    return [
        {
            "kind": "drop",
            "arm": "right" if i % 2 else "left",
            "at": round(DURATION_S * i / max(n, 1), 9),
            "duration": 1e-6,
            "probability": 0.5,
        }
        for i in range(n)
    ]


class _ScanSchedule(FaultSchedule):
    """Answers every query by scanning the whole list (no index): the old cost model."""

    def active(self, kind, arm, t):
        return tuple(s for s in self.specs if s.kind is kind and s.arm is arm and s.active(t))


def _timed_run(sc: Scenario, scan: bool) -> float:
    import rob_twin.twin.sim.closed_loop as closed_loop

    original = closed_loop.FaultSchedule
    if scan:
        closed_loop.FaultSchedule = _ScanSchedule
    try:
        t0 = time.perf_counter()
        run_scenario(sc, record=False, progress=False)
        return time.perf_counter() - t0
    finally:
        closed_loop.FaultSchedule = original


@benchmark("fault_list")
def run() -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in SIZES:
            path = Path(tmp) / f"faults_{n}.json"
            path.write_text(
                json.dumps({"name": f"faults_{n}", "duration": DURATION_S, "faults": fault_list(n)})
            )
            t0 = time.perf_counter()
            sc = scenario_module.Scenario.load(path)
            load_s = time.perf_counter() - t0
            row = {
                "faults": n,
                "file_bytes": path.stat().st_size,
                "load_s": round(load_s, 3),
                "run_s": round(_timed_run(sc, scan=False), 3),
            }
            if n in SCAN_SIZES:
                row["scan_run_s"] = round(_timed_run(sc, scan=True), 3)
            rows.append(row)
        path = Path(tmp) / "over_cap.json"
        path.write_text(
            json.dumps({"name": "over", "duration": DURATION_S, "faults": fault_list(OVER_CAP)})
        )
        t0 = time.perf_counter()
        try:
            scenario_module.Scenario.load(path)
            refused = False
        except ScenarioError:
            refused = True
        refused_load_s = time.perf_counter() - t0
    return {
        "simulated_s": DURATION_S,
        "rows": rows,
        "over_cap": {
            "faults": OVER_CAP,
            "refused": refused,
            "refused_load_s": round(refused_load_s, 3),
        },
        "timing_note": "wall-clock seconds on the machine that ran the benchmark; simulated run",
    }
