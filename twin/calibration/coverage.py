"""Do the fit's 95 % intervals cover the truth? A coverage study on correctly specified
synthetic draws (the twin records itself with hidden parameters and the fit is asked for
exactly those).

``coverage_study(draws, seed)`` makes ``draws`` recordings (``synthetic.record_hidden``,
``seconds`` each, a seed of its own per draw, none of the seeds the tests or the
calibration benchmark use when ``seed`` is left at its default), each hiding five
parameters drawn by ``hidden_draw``: draw ``k`` is on the right arm when ``k`` is even, on
the left when odd; two joints of it (drawn from J1-J6: J7 rests on its joint limit at
ROB's home, -1.571 rad, so half of its excitation is clipped and a fit meets the limit's
kink, an excitation matter, not an interval one) carry two joint kinds each, the kinds taken in
turn from ``JOINT_PAIRS`` (every joint kind once in four draws), and one arm kind in turn
from ``ARM_KINDS`` (a command delay, a feedback delay, a payload). Values: a positive kind
x0.6-1.6 of the twin's value (log-uniform), friction loss 0.1-0.5 N m, a zero offset
+-0.03 rad, delays 1-15 whole ms, a payload 0.3-1.5 kg. A draw with a torque constant fits
with ``CURRENT_WEIGHT`` (currents weighed), any other with positions only. Every hidden
name is fitted from the twin's nominal values with ``fit.fit`` and counted inside when its
true value lies in its reported 95 % interval (``FitResult.interval_bounds``); a name the
fit does not give a number counts as outside. The result also counts the draws a misfit
rule flagged (a correctly specified fit should not be flagged).

On the command line: ``python -m rob_twin.twin.calibration.coverage --draws 24`` prints
the result as JSON (a draw costs 100-300 rollouts of a ``seconds`` recording: on a shared
2-core machine about a minute per draw at 4 s).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rob_twin.models.names import Arm
from rob_twin.models.robot import Robot, robot_of
from rob_twin.twin.calibration.parameters import ARM_KINDS, nominal_parameters

JOINT_PAIRS = (
    ("armature", "damping"),
    ("frictionloss", "kp"),
    ("lag_s", "integral_gain"),
    ("amps_per_nm", "zero_offset_rad"),
)
# a Damiao robot's joint kinds in four pairs: its identified friction's four terms, armature,
# the MIT gain factors and the encoder zero
DAMIAO_JOINT_PAIRS = (
    ("armature", "friction_fv"),
    ("friction_fc", "kp_scale"),
    ("friction_fo", "kd_scale"),
    ("friction_k", "zero_offset_rad"),
)
CURRENT_WEIGHT = 0.03  # rad per drive unit: the current's quantum weighs about the position's
DEFAULT_SEED = 4400
DEFAULT_SECONDS = 4.0


def hidden_draw(k: int, seed: int = DEFAULT_SEED, robot: Robot | None = None) -> dict[str, float]:
    """Draw ``k``'s hidden parameters (see the module docstring) for ``robot`` (None: the
    default robot; its nominal values scale the positive kinds)."""
    robot = robot_of(robot)
    rng = np.random.default_rng([seed, k])
    nominal = nominal_parameters(robot.model(), robot)
    arm = (Arm.RIGHT, Arm.LEFT)[k % 2].value
    joints = sorted(int(j) for j in rng.choice(np.arange(1, 7), size=2, replace=False))
    pairs = DAMIAO_JOINT_PAIRS if robot.family == "damiao" else JOINT_PAIRS
    out: dict[str, float] = {}
    for j in joints:
        for kind in pairs[k % len(pairs)]:
            name = f"{arm}/j{j}/{kind}"
            if kind == "frictionloss":
                out[name] = float(rng.uniform(0.1, 0.5))
            elif kind == "friction_fo":
                out[name] = float(nominal[name] + rng.uniform(-0.08, 0.08))
            elif kind == "zero_offset_rad":
                out[name] = float(rng.uniform(-0.03, 0.03))
            else:
                out[name] = float(
                    nominal[name] * math.exp(rng.uniform(math.log(0.6), math.log(1.6)))
                )
    kind = ARM_KINDS[k % len(ARM_KINDS)]
    if kind == "payload_kg":
        out[f"{arm}/{kind}"] = float(rng.uniform(0.3, 1.5))
    else:
        out[f"{arm}/{kind}"] = float(rng.integers(1, 16)) / 1000.0
    return out


def coverage_draw(k: int, seed: int = DEFAULT_SEED, seconds: float = DEFAULT_SECONDS) -> dict:
    """Record draw ``k``, fit its hidden names, and say which truths its intervals hold."""
    from rob_twin.twin.calibration.fit import FitConfig, fit
    from rob_twin.twin.calibration.synthetic import record_hidden

    hidden = hidden_draw(k, seed)
    weight = CURRENT_WEIGHT if any(n.endswith("/amps_per_nm") for n in hidden) else 0.0
    with tempfile.TemporaryDirectory() as tmp:
        rec = record_hidden(Path(tmp) / "draw.log", hidden, seconds, seed=seed + 7919 * (k + 1))
        t0 = time.perf_counter()
        result = fit([rec], list(hidden), config=FitConfig(max_iters=15, current_weight=weight))
        wall = time.perf_counter() - t0
    params = {}
    for name, truth in hidden.items():
        ci = result.interval_bounds.get(name)
        params[name] = {
            "truth": truth,
            "value": result.values[name],
            "interval": ci,
            "inside": bool(ci is not None and ci[0] <= truth <= ci[1]),
        }
    return {
        "draw": k,
        "current_weight": weight,
        "parameters": params,
        "misfit": [w["rule"] for w in result.misfit],
        "residual": result.residual,
        "rollouts": result.evaluations,
        "fit_wall_s": round(wall, 1),
    }


def summarise(draws: list[dict]) -> dict:
    """Totals of ``coverage_draw`` results: truths inside of all, per kind, flagged draws."""
    inside = total = 0
    by_kind: dict[str, list[int]] = {}
    for d in draws:
        for name, p in d["parameters"].items():
            kind = name.rsplit("/", 1)[-1]
            tally = by_kind.setdefault(kind, [0, 0])
            tally[0] += p["inside"]
            tally[1] += 1
            inside += p["inside"]
            total += 1
    return {
        "inside": inside,
        "intervals": total,
        "coverage": inside / total if total else math.nan,
        "by_kind": {k: {"inside": v[0], "intervals": v[1]} for k, v in sorted(by_kind.items())},
        "flagged_draws": sum(1 for d in draws if d["misfit"]),
        "draws": len(draws),
    }


def coverage_study(
    draws: int = 24,
    seed: int = DEFAULT_SEED,
    seconds: float = DEFAULT_SECONDS,
    workers: int = 1,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """``draws`` correctly specified draws from ``seed`` fitted and counted (see the module
    docstring); ``workers`` processes; ``progress`` gets each draw's result."""
    ks = list(range(draws))
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(coverage_draw, ks, [seed] * draws, [seconds] * draws))
        for r in results:
            if progress:
                progress(r)
    else:
        results = []
        for k in ks:
            results.append(coverage_draw(k, seed, seconds))
            if progress:
                progress(results[-1])
    return {
        "hardware_io": False,
        "evidence_class": "simulated: recordings the twin made with hidden parameters",
        "setup": {"draws": draws, "seed": seed, "seconds": seconds, "level": 0.95},
        "summary": summarise(results),
        "draws": results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=24)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", help="also write the result here (JSON)")
    args = parser.parse_args(argv)

    def say(d: dict) -> None:
        inside = sum(p["inside"] for p in d["parameters"].values())
        print(
            f"draw {d['draw']}: {inside}/{len(d['parameters'])} inside, misfit {d['misfit']}, "
            f"{d['rollouts']} rollouts, {d['fit_wall_s']} s",
            flush=True,
        )

    result = coverage_study(args.draws, args.seed, args.seconds, args.workers, progress=say)
    text = json.dumps(result, indent=1, default=float)
    if args.out:
        Path(args.out).write_text(text)
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
