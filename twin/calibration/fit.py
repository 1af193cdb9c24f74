"""Fitting the twin's parameters to recordings, with MuJoCo's own system identification.

``fit(recordings, names)`` finds the values of the parameters ``names``
(``rob_twin.twin.calibration.parameters``) that make the twin's prediction of every
recording (``predict``: its host commands replayed, recorded vs predicted feedback) closest
in the least-squares sense. What ``mujoco.sysid`` provides is used as it is: its
``Parameter``/``ParameterDict`` for values and bounds, ``optimize`` (MuJoCo's bounded
least-squares solver, finite-difference Jacobian) and ``calculate_intervals`` (confidence
intervals from the Jacobian at the optimum). What it lacks for this twin is written here:

- the rollout is the twin's whole drive and bus path, not a MuJoCo actuator rollout, so the
  residual is our own (``custom residual``: ``Prediction.residual``);
- command delays move host frames by whole physics steps, a staircase a gradient cannot
  follow: each arm's command delay is found first by a search over whole milliseconds
  (coarse, then fine), like the transport-delay estimate MuJoCo Playground makes before its
  fit, and held while the rest is fitted;
- parameters are fitted in scaled units (value / scale), so an armature of 0.08 kg m^2 and a
  gain of 400 N m/rad move alike;
- a parameter the recordings do not excite (its Jacobian column below
  ``FitConfig.identifiable_rel`` of the largest) is not given a number: it keeps its
  starting value and is reported by name in ``not_identifiable``.
"""

from __future__ import annotations

import contextlib
import io
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rob_twin.models.errors import InvalidValueError, RobTwinError
from rob_twin.models.robot import Robot, robot_of
from rob_twin.twin.bus.replay import Recording, read_recording
from rob_twin.twin.calibration.parameters import (
    Bounds,
    check_values,
    default_bounds,
    nominal_parameters,
    parse_name,
)
from rob_twin.twin.calibration.predict import Prediction, predict


class FitError(RobTwinError):
    """A fit that cannot be done: no parameter selected, a bound that excludes the start."""


@dataclass(frozen=True)
class FitConfig:
    """max_iters: solver iterations; current_weight: weight of current errors in the
    residual [rad per drive unit] (0: positions only); identifiable_rel: a parameter whose
    Jacobian column norm is below this fraction of the largest is not identifiable, nor one
    whose change by its whole scale moves the prediction by less than min_sensitivity_rad
    RMS [rad] (a seventh of the feedback's 1/128 deg quantum);
    seconds: use only the first seconds of each recording [s] (None: all)."""

    max_iters: int = 12
    current_weight: float = 0.0
    identifiable_rel: float = 1e-3
    min_sensitivity_rad: float = 2e-5
    seconds: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_iters, int) or not 1 <= self.max_iters <= 1000:
            raise InvalidValueError("max_iters", self.max_iters, "an integer in 1..1000")
        for name in ("current_weight", "identifiable_rel", "min_sensitivity_rad"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InvalidValueError(name, value, "a finite number >= 0")


def default_config() -> FitConfig:
    return FitConfig()


@dataclass
class FitResult:
    """values: every fitted name's value [its unit]; start: where the fit began;
    intervals: 95 % half widths (None: not identifiable, or a delay found by search: its
    step); rms_before/rms_after: per recording role ("fit", "validate") per joint RMS
    position error [rad]; evaluations: rollouts of every recording; converged: the cost
    fell and the solver stopped on its own criteria."""

    values: dict[str, float]
    start: dict[str, float]
    bounds: dict[str, Bounds]
    intervals: dict[str, float | None]
    not_identifiable: list[str]
    rms_before: dict[str, dict[str, float]]
    rms_after: dict[str, dict[str, float]]
    cost_before: float
    cost_after: float
    evaluations: int
    wall_s: float
    notes: list[str] = field(default_factory=list)


def _scale(name: str, start: float, bounds: Bounds) -> float:
    return max(abs(start), 0.1 * (bounds.upper - bounds.lower), 1e-6)


def _cost(predictions: list[Prediction], weight: float) -> float:
    r = np.concatenate([p.residual(weight) for p in predictions])
    return float(np.sqrt(np.mean(r**2))) if r.size else 0.0


def _rms(predictions: list[Prediction]) -> dict[str, float]:
    """Per joint RMS over all ``predictions`` together [rad]."""
    sq: dict[str, list[np.ndarray]] = {}
    for p in predictions:
        for (arm, j), tr in p.tracks.items():
            sq.setdefault(f"{arm.value}/j{j}", []).append(tr.position_error**2)
    return {k: float(np.sqrt(np.mean(np.concatenate(v)))) for k, v in sq.items()}


def _least_squares(values, free, bounds, fit_recs, run, config, say):
    """MuJoCo's bounded least squares (``mujoco.sysid.optimize``) over ``free`` in scaled
    units, from ``values``: (values with the fitted ones, the solver's result, the residual
    function, the fitted ParameterDict, the scales)."""
    from mujoco import sysid

    scale = {n: _scale(n, values[n], bounds[n]) for n in free}
    params = sysid.ParameterDict()
    for n in free:
        params.add(
            sysid.Parameter(
                n,
                nominal=values[n] / scale[n],
                min_value=bounds[n].lower / scale[n],
                max_value=bounds[n].upper / scale[n],
            )
        )

    def values_of(column: np.ndarray) -> dict[str, float]:
        return values | {n: float(column[i]) * scale[n] for i, n in enumerate(free)}

    def residual_fn(x, _params, **_kw):
        cols = x.reshape(len(free), -1)
        out = []
        for k in range(cols.shape[1]):
            preds = run(values_of(cols[:, k]), fit_recs)
            out.append(np.concatenate([p.residual(config.current_weight) for p in preds]))
        r = np.stack(out, axis=1) if np.ndim(x) == 2 else out[0]  # columns in, columns out
        say(f"calibrate: {cols.shape[1]} rollout(s)")
        return [r], [], []

    params.move_off_bounds()  # a start on a bound (no payload, no friction) can stall
    solver_log = io.StringIO()  # the solver prints its iterations: pass them to progress
    with contextlib.redirect_stdout(solver_log):
        opt_params, result = sysid.optimize(
            params, residual_fn, optimizer="mujoco", verbose=False, max_iters=config.max_iters
        )
    for line in solver_log.getvalue().splitlines():
        if line.strip():
            say(f"calibrate: solver {line.strip()}")
    return values_of(opt_params.as_vector()), result, residual_fn, opt_params, scale


def fit(
    recordings: list[Recording | str],
    names: list[str],
    start: dict[str, float] | None = None,
    bounds: dict[str, Bounds] | None = None,
    validate: list[Recording | str] = (),
    config: FitConfig | None = None,
    progress: Callable[[str], None] | None = None,
    robot: Robot | None = None,
) -> FitResult:
    """Fit ``names`` to ``recordings`` (see the module docstring); ``start``: starting
    values (default: the twin's nominal ones; other names keep theirs); ``bounds``: per
    name (default ``default_bounds``); ``validate``: recordings only scored, never fitted;
    ``progress``: called with one line per stage and per solver evaluation; ``robot``: the
    robot recorded (a ``rob_twin.models.robot.Robot`` with Amber drives; None: the default
    robot), whose twin predicts the recordings."""
    from mujoco import sysid

    robot = robot_of(robot)
    config = config or default_config()
    say = progress or (lambda _line: None)
    if not names:
        raise FitError("nothing to fit: select at least one parameter (--fit)")
    for name in names:
        parse_name(name)
    t0 = time.perf_counter()
    fit_recs = [r if isinstance(r, Recording) else read_recording(r) for r in recordings]
    val_recs = [r if isinstance(r, Recording) else read_recording(r) for r in validate]
    nominal = nominal_parameters(robot.model(), robot)
    base = {n: nominal[n] for n in names} | check_values(dict(start or {}))
    bounds = {n: (bounds or {}).get(n) or default_bounds(n, base[n]) for n in names}
    for n in names:
        b = bounds[n]
        if not b.lower <= base[n] <= b.upper:
            raise FitError(f"{n}: start {base[n]!r} is outside its bounds [{b.lower}, {b.upper}]")
    evaluations = 0

    def run(values: dict[str, float], recs: list[Recording]) -> list[Prediction]:
        nonlocal evaluations
        evaluations += 1
        return [predict(r, values, seconds=config.seconds, robot=robot) for r in recs]

    before = run(base, fit_recs)
    cost_before = _cost(before, config.current_weight)
    n_recs = len(fit_recs)
    say(f"calibrate: start, RMS residual {1000 * cost_before:.3f} mrad over {n_recs} recording(s)")
    values = dict(base)
    intervals: dict[str, float | None] = {}
    notes: list[str] = []
    not_identifiable: list[str] = []

    # 1. command delays: a search over whole milliseconds (the replay moves frames by steps)
    for name in [n for n in names if parse_name(n).kind == "command_delay_s"]:
        b = bounds[name]
        grid = np.arange(b.lower, b.upper + 1e-12, 0.005)
        scores = {
            float(d): _cost(run(values | {name: float(d)}, fit_recs), config.current_weight)
            for d in grid
        }
        best = min(scores, key=scores.get)
        fine = np.arange(max(b.lower, best - 0.004), min(b.upper, best + 0.004) + 1e-12, 0.001)
        scores |= {
            float(d): _cost(run(values | {name: float(d)}, fit_recs), config.current_weight)
            for d in fine
        }
        if max(scores.values()) - min(scores.values()) < config.min_sensitivity_rad:
            not_identifiable.append(name)
            intervals[name] = None
            say(f"calibrate: {name}: the recordings do not show it (no motion to delay)")
            continue
        values[name] = min(scores, key=scores.get)
        intervals[name] = 0.0005  # half a physics step: the search's resolution
        say(f"calibrate: {name} = {1000 * values[name]:.0f} ms (search over {len(scores)} delays)")

    # 2. everything else: MuJoCo's least squares in scaled units. A host-side recording
    # sees only the round trip of an arm's command and feedback delays (the physics does not
    # change with time): with the command delay searched, its feedback delay is held.
    searched = {parse_name(n).arm for n in names if parse_name(n).kind == "command_delay_s"}
    for n in names:
        p = parse_name(n)
        if p.kind == "feedback_delay_s" and p.arm in searched:
            not_identifiable.append(n)
            intervals[n] = None
            notes.append(
                f"{n}: held at {values[n]:g} s; a host-side recording shows only the round "
                f"trip, fitted as {p.arm.value}/command_delay_s"
            )
    free = [
        n for n in names if parse_name(n).kind != "command_delay_s" and n not in not_identifiable
    ]
    delay_names = [n for n in names if n in intervals and intervals[n] is not None]
    if free:
        values, result, residual_fn, opt_params, scale = _least_squares(
            values, free, bounds, fit_recs, run, config, say
        )
        # the delay was searched with the other parameters at their start: search it again
        # around its value with the fitted ones, and solve again when it moves (two rounds)
        for _round in range(2):
            moved = False
            for name in delay_names:
                b, here = bounds[name], values[name]
                near = [round(here + k * 0.001, 6) for k in (-2, -1, 1, 2)]
                near = [d for d in near if b.lower <= d <= b.upper]
                scores = {here: _cost(run(values, fit_recs), config.current_weight)}
                scores |= {
                    d: _cost(run(values | {name: d}, fit_recs), config.current_weight) for d in near
                }
                best = min(scores, key=scores.get)
                if best != here:
                    say(f"calibrate: {name} -> {1000 * best:.0f} ms with the fitted parameters")
                    values[name], moved = best, True
            if not moved:
                break
            values, result, residual_fn, opt_params, scale = _least_squares(
                values, free, bounds, fit_recs, run, config, say
            )
        x = opt_params.as_vector()
        jac = np.atleast_2d(np.asarray(result.jac, float))
        r_star = residual_fn(x, opt_params)[0]
        norms = np.linalg.norm(jac, axis=0) if jac.size else np.zeros(len(free))
        top = float(norms.max()) if norms.size else 0.0
        try:
            _, half = sysid.calculate_intervals(r_star, jac)
        except (np.linalg.LinAlgError, ValueError) as err:
            half = np.full(len(free), np.nan)
            notes.append(f"confidence intervals not computed: {err}")
        rms_sensitivity = norms / math.sqrt(max(jac.shape[0], 1))
        for i, n in enumerate(free):
            weak = rms_sensitivity[i] < config.min_sensitivity_rad
            if top == 0.0 or weak or norms[i] < config.identifiable_rel * top:
                not_identifiable.append(n)
                values[n] = base[n]
                intervals[n] = None
            else:
                h = float(half[i]) * scale[n] if i < len(half) else math.nan
                intervals[n] = h if math.isfinite(h) else None
    after = run(values, fit_recs)
    cost_after = _cost(after, config.current_weight)
    say(f"calibrate: done, RMS residual {1000 * cost_after:.3f} mrad ({evaluations} rollouts)")
    rms_before, rms_after = {"fit": _rms(before)}, {"fit": _rms(after)}
    if val_recs:
        rms_before["validate"] = _rms(run(base, val_recs))
        rms_after["validate"] = _rms(run(values, val_recs))
    if cost_after > cost_before:
        notes.append("the fit did not lower the residual: the start values are kept")
        values = dict(base)
    if not_identifiable:
        notes.append(
            "not identifiable from these recordings (no excitation): " + ", ".join(not_identifiable)
        )
    return FitResult(
        values={n: values[n] for n in names},
        start={n: base[n] for n in names},
        bounds=bounds,
        intervals=intervals,
        not_identifiable=not_identifiable,
        rms_before=rms_before,
        rms_after=rms_after,
        cost_before=cost_before,
        cost_after=min(cost_after, cost_before),
        evaluations=evaluations,
        wall_s=time.perf_counter() - t0,
        notes=notes,
    )
