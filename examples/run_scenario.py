"""Run a shipped scenario from Python, headless, and read what it did (simulated).

    python examples/run_scenario.py [SCENARIO.json] [--seconds S]

Loads the scenario (validated like ``rob-twin run --check``), shortens it to ``--seconds``
simulated seconds (default 1.5), runs it through the owners, the Amber codec, the simulated
buses and the drives without video, and prints per arm the largest tracking error and the
refused targets. Exit code 0.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from rob_twin.twin import Scenario, run_scenario

WAVE = Path(__file__).resolve().parents[1] / "experiments" / "scenarios" / "wave.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default=str(WAVE), help="scenario file (default: wave)")
    ap.add_argument("--seconds", type=float, default=1.5, help="simulated seconds (default 1.5)")
    args = ap.parse_args(argv)

    raw = json.loads(Path(args.scenario).read_text())
    raw.pop("$schema", None)
    raw["duration"] = min(raw["duration"], args.seconds)
    raw["keyframes"] = [k for k in raw.get("keyframes", []) if k["t"] <= raw["duration"]]
    raw["plans"] = [p for p in raw.get("plans", []) if p["t"] <= raw["duration"]]
    scenario = Scenario.from_dict(raw)

    result = run_scenario(scenario, record=False, progress=False)
    print(f"{result.scenario}: {result.status}, {result.simulated_s:.2f} s simulated")
    for arm in sorted(result.commanded):
        error = np.max(np.abs(result.commanded[arm] - result.measured[arm]))
        refused = sum(result.refused_targets.get(arm, {}).values())
        print(f"  {arm}: largest tracking error {error:.4f} rad, {refused} targets refused")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
