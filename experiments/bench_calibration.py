"""Benchmark: does ``rob-twin calibrate`` recover what is hidden, and does it predict better?

Recovery: ``DRAWS`` seeded draws of hidden parameters on the right arm (armature, damping
of J2 and J4 within x0.5-2 of the twin's values, friction loss of J2 and J4 within 0.1-0.6 N m,
a command delay of 0-20 ms, a payload of 0-2 kg), each recorded by the twin itself for
``FIT_S`` s of the multi-sine excitation (``twin/calibration/synthetic.py``; the feedback's
1/128 deg quantisation is the encoder noise), then fitted from the twin's nominal values.
A draw counts as recovered when every fitted value is within 5 % of the hidden one (the
delay within 1 ms). Prediction: each draw's fit scored on a validation recording it never
saw (another seed and amplitude), RMS joint position error before and after. Cost: one
rollout of a 60 s recording of both arms, and ``compare`` of it, timed; a fit costs about
(rollouts) x (one rollout).

Smaller than the issue's figure (60 s of excitation per arm, 10 draws, the full parameter
set): a fit on this shared 2-core machine costs about a second per rollout per 8 s of
recording and a hundred or more rollouts, so the draws use 8 s recordings and eight
parameters; the note in the result says so.
"""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from rob_twin.experiments.registry import benchmark

DRAWS = int(os.environ.get("ROB_TWIN_CAL_DRAWS", "10"))
FIT_S = 8.0
VALIDATE_S = 6.0
JOINTS = (2, 4)


def _hidden(seed: int) -> dict[str, float]:
    from rob_twin.models.loading import load_scene
    from rob_twin.twin.calibration.parameters import nominal_parameters

    rng = np.random.default_rng(1000 + seed)
    nominal = nominal_parameters(load_scene())
    out = {}
    for j in JOINTS:
        for kind in ("armature", "damping"):
            name = f"right/j{j}/{kind}"
            out[name] = float(nominal[name] * rng.uniform(0.5, 2.0))
        out[f"right/j{j}/frictionloss"] = float(rng.uniform(0.1, 0.6))
    out["right/command_delay_s"] = float(rng.integers(0, 21)) / 1000.0
    out["right/payload_kg"] = float(rng.uniform(0.0, 2.0))
    return out


def _draw(seed: int) -> dict:
    from rob_twin.twin.calibration.fit import FitConfig, fit
    from rob_twin.twin.calibration.synthetic import record_hidden

    hidden = _hidden(seed)
    with tempfile.TemporaryDirectory() as tmp:
        rec = record_hidden(Path(tmp) / "fit.log", hidden, FIT_S, seed=seed)
        val = record_hidden(
            Path(tmp) / "val.log", hidden, VALIDATE_S, seed=seed + 500, amplitude_rad=0.15
        )
        t0 = time.perf_counter()
        result = fit([rec], list(hidden), validate=[val], config=FitConfig(max_iters=15))
        wall = time.perf_counter() - t0
    errors = {}
    for name, truth in hidden.items():
        got = result.values[name]
        errors[name] = (
            abs(got - truth) * 1000.0
            if name.endswith("delay_s")
            else abs(got - truth) / max(abs(truth), 1e-12) * 100.0
        )
    recovered = (
        all(e <= (1.0 if n.endswith("delay_s") else 5.0) for n, e in errors.items())
        and not result.not_identifiable
    )
    before = max(result.rms_before["validate"].values())
    after = max(result.rms_after["validate"].values())
    return {
        "seed": seed,
        "hidden": hidden,
        "fitted": result.values,
        "error": {n: round(e, 3) for n, e in errors.items()},
        "error_units": "percent of the hidden value; delays in ms",
        "recovered": recovered,
        "not_identifiable": result.not_identifiable,
        "validate_worst_rms_mrad": {"before": before * 1e3, "after": after * 1e3},
        "validate_improvement": before / max(after, 1e-12),
        "rollouts": result.evaluations,
        "fit_wall_s": round(wall, 1),
    }


def _cost() -> dict:
    from rob_twin.twin.calibration.compare import compare_plots, compare_recording
    from rob_twin.twin.calibration.predict import predict
    from rob_twin.twin.calibration.synthetic import record_hidden

    with tempfile.TemporaryDirectory() as tmp:
        rec = record_hidden(Path(tmp) / "long.log", {}, 60.0)
        t0 = time.perf_counter()
        predict(rec)
        rollout = time.perf_counter() - t0
        t0 = time.perf_counter()
        compare_plots(compare_recording(rec), Path(tmp))
        cmp_s = time.perf_counter() - t0
    return {"rollout_60s_wall_s": round(rollout, 2), "compare_60s_wall_s": round(cmp_s, 2)}


@benchmark("calibration")
def run() -> dict:
    with ProcessPoolExecutor(max_workers=2) as pool:
        draws = list(pool.map(_draw, range(DRAWS)))
    improvements = [d["validate_improvement"] for d in draws]
    cost = _cost()
    median_rollouts = float(np.median([d["rollouts"] for d in draws]))
    return {
        "hardware_io": False,
        "evidence_class": "simulated: recordings made by the twin with hidden parameters",
        "setup": {
            "draws": DRAWS,
            "fit_recording_s": FIT_S,
            "validate_recording_s": VALIDATE_S,
            "parameters_per_draw": len(_hidden(0)),
            "hidden": "right J2, J4: armature and damping x0.5-2, friction loss 0.1-0.6 N m; "
            "command delay 0-20 ms; payload 0-2 kg",
        },
        "recovered_draws": sum(d["recovered"] for d in draws),
        "recovery_rule": "every value within 5 % (delay within 1 ms), none unidentified",
        "validate_improvement": {
            "min": round(min(improvements), 2),
            "median": round(float(np.median(improvements)), 2),
        },
        "fit_wall_s_median": float(np.median([d["fit_wall_s"] for d in draws])),
        "rollouts_median": median_rollouts,
        "cost": cost
        | {"fit_60s_estimate_s": round(median_rollouts * cost["rollout_60s_wall_s"], 0)},
        "draws": draws,
        "note": "smaller than the issue's 60 s per arm and full parameter set, for time: "
        "see the module docstring",
    }
