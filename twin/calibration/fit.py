"""Fitting the twin's parameters to recordings, with MuJoCo's own system identification.

``fit(recordings, names)`` finds the values of the parameters ``names``
(``rob_twin.twin.calibration.parameters``) that make the twin's prediction of every
recording (``predict``: its host commands replayed, recorded vs predicted feedback) closest
in the least-squares sense. What ``mujoco.sysid`` provides is used as it is: its
``Parameter``/``ParameterDict`` for values and bounds and ``optimize`` (MuJoCo's bounded
least-squares solver, finite-difference Jacobian); its ``calculate_intervals`` (white-noise
intervals from the Jacobian at the optimum) under-covers here and is replaced (Intervals,
below). What it lacks for this twin is written here:

- the rollout is the twin's whole drive and bus path, not a MuJoCo actuator rollout, so the
  residual is our own (``custom residual``: ``Prediction.residual``);
- command delays move host frames by whole physics steps, a staircase a gradient cannot
  follow: each arm's command delay is found first by a search over whole milliseconds
  (coarse, then fine), like the transport-delay estimate MuJoCo Playground makes before its
  fit, and held while the rest is fitted; a feedback delay fitted without its arm's command
  delay starts the least squares from the same search, repeated with the fitted parameters
  (its residual ripples with the commands' 5 ms staircase: from 0 ms the solver settled
  1.3 ms short of a 14 ms delay, and from a search made with zero offsets 20 mrad off, at
  5.3 ms for 1);
- parameters are fitted in scaled units (value / scale), so an armature of 0.08 kg m^2 and a
  gain of 400 N m/rad move alike; the Jacobian's finite-difference step is 1e-5 of the
  scale (``FD_STEP``; MuJoCo's default 1.5e-8 is inside a rollout's numerical noise);
- the solver stops when the Gauss-Newton step left moves no parameter by more than a tenth
  of its standard error, or when its trial steps, failing to lower the cost, have shrunk
  below that (``_least_squares``): the same data fits in the same rollouts whatever its
  format;
- a parameter the recordings do not excite (its Jacobian column below
  ``FitConfig.identifiable_rel`` of the largest) is not given a number: it keeps its
  starting value and is reported by name in ``not_identifiable`` (one the recordings need
  moved but do not bound there, a friction that holds its joint still, keeps the value the
  fit reached, without an interval, and a note says so); a torque constant
  (``amps_per_nm``) shows only in the drives' current, so a fit that weighs currents 0
  (``FitConfig.current_weight``, ``--current-weight``) holds it and says so
  (``unweighted``), not that the recording fails to excite it.

Intervals (``interval_halfwidths``, ``bounded_interval``). ``mujoco.sysid``'s
``calculate_intervals`` takes the residuals for white noise (variance RSS / (n - p), every
sample independent). A recording's residual is not: at the optimum it is the feedback's
quantisation (a count of 1/128 deg, truncated) and whatever the twin does not model, and
both are correlated from one feedback frame to the next, so those intervals were too
narrow (8 of 13 truths inside on correctly specified draws). And the count is truncated
toward zero: half a count of bias per joint, which the fit took for a gain or a lag (a
drive's lag 5.5 % off, 3.5 of its standard errors); the residual is now taken against
the centre of each count's cell (``predict``), which removes it. Here, at the solver's
final point and with its finite-difference Jacobian J (rows: residual entries, columns: the
identifiable parameters in scaled units):

1. floor: the residual of each kind (positions; currents times their weight) is raised to
   the recording's floor when its RMS is below it: per joint track the larger of its
   quantisation, q / sqrt(12) (q: 1/128 deg, or 1/256 drive unit of current; Damiao: one
   wire count), and the white noise the recorded signal itself carries (``noise_level``,
   from its second differences: a drive's current noise, which no twin predicts): no
   interval is narrower than the feedback can tell;
2. correlation: per parameter the wider of two covariances for correlated residuals:
   (a) a sandwich (heteroskedasticity and autocorrelation consistent, Newey-West)
   H^-1 M H^-1 with H = J^T J and M the sum over joint tracks of the scores g_t = J_t r_t
   and their lagged products up to a bandwidth L (Bartlett weights 1 - l / (L + 1)), L
   from the track's lag-1 autocorrelation rho (Andrews' AR(1) rule, 1.1447 (a m)^(1/3),
   a = 4 rho^2 / ((1 - rho)^2 (1 + rho)^2), m samples); (b) the white-noise one with each
   kind's residual variance times (1 + rho) / (1 - rho), rho pooled over its tracks (an
   effective sample size n (1 - rho) / (1 + rho)). Correlated residuals widen the
   interval as far as they carry information the white-noise formula counts twice (on a
   linear model with AR(1) residuals, rho 0.8: 91-95 % coverage, white noise 43-52 %);
3. convergence: the Gauss-Newton step J^+ r still left at the solver's last point (it
   stops after ``max_iters``) is added in quadrature to 1.96 sigma;
4. bounds: for a kind positive by its physics (armature, damping, friction loss, gain,
   lag, integral gain, torque constant, payload, feedback delay) the interval is
   value * exp(+-h / value) (the same width in log space: never below 0), then every
   interval is clipped to the parameter's bounds; a searched command delay's interval is
   +-0.5 ms, the search's resolution.

Measured (``python -m rob_twin.twin.calibration.coverage --draws 24 --seed S``: correctly
specified draws, both arms, every kind, five hidden parameters each, 4 s recordings):
119 of 120 truths inside their 95 % intervals with seed 4400 and 115 of 120 with seed 5151
(234 of 240, 97.5 %; the six misses within 1.3 half widths, no kind below 10 of 12), no
draw flagged as a misfit, a median of 47-62 rollouts a fit.

Misfit (``misfit``): warnings, each named by its rule, that the fitted twin does not
explain the recordings, so its numbers and intervals are not to be trusted:

- ``on_bound``: a fitted value within 1 % of its range from a bound (a lower bound of 0
  of a kind that cannot be negative, no payload, no delay, no friction, excepted);
- ``interval_outside_bounds``: its 95 % interval (before the clip) leaves the bounds (the
  same exception);
- ``residual_above_floor``: the residual's RMS after the fit more than 10x the
  recording's floor (its quantisation, 0.039 mrad on Amber positions, or its own measured
  noise where that is larger; a correct fit sits at about 1x: the residual is taken
  against the centre of each recorded count, ``predict``);
- ``residual_structure``: the residual smooth in time, its lag-1 autocorrelation (per
  joint about its mean, pooled) above 0.9 while it is more than 3x the floor: a motion the
  twin does not make, not noise.

Drive noise (``FitConfig.replay_noise_rad``): a drive's servo noise dithers its friction and
settles it differently from a smooth replay, a bias no interval carries (simulated, ROB, 1
mrad servo noise, 60 s, four seeds: friction loss fitted 2.7-16 % off, nearly every interval
excluding its truth). With ``replay_noise_rad`` > 0 every rollout replays with servo noise
of that std, one seeded realisation for all of them (another than the recorded run's:
``replay``), so the fit compares a noisy twin with a noisy robot; the noise-on-noise part of
the residual then raises its level and so the intervals (floor ratio about 1.8 against 1.35
noiseless). ``rob-twin calibrate --replay-noise auto`` measures the std first
(``drive_noise.estimate_drive_noise``). Positions only: see ``FitConfig``.
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
    check_family,
    check_values,
    default_bounds,
    nominal_parameters,
    parse_name,
)
from rob_twin.twin.calibration.predict import POSITION_QUANTUM_RAD, Prediction, predict, quanta


class FitError(RobTwinError):
    """A fit that cannot be done: no parameter selected, a bound that excludes the start."""


MAX_REPLAY_NOISE_RAD = 0.05  # FitConfig.replay_noise_rad's upper bound [rad]: 50x ROB's drives'


@dataclass(frozen=True)
class FitConfig:
    """max_iters: solver iterations; current_weight: weight of current errors in the
    residual [rad per drive unit] (0: positions only); identifiable_rel: a parameter whose
    Jacobian column norm is below this fraction of the largest is not identifiable, nor one
    whose change by its whole scale moves the prediction by less than min_sensitivity_rad
    RMS [rad] (a seventh of the feedback's 1/128 deg quantum);
    seconds: use only the first seconds of each recording [s] (None: all);
    replay_noise_rad: every rollout replays with drive noise of this std [rad on a servo
    target] (``predict``'s ``drive_noise_rad``, one seeded realisation for every rollout;
    ``drive_noise.estimate_drive_noise`` measures it on a recording); 0: noiseless. Positions
    only: a replay's own noise in the currents would pull a torque constant toward zero
    (the fitted scale of a noisy prediction against another noisy signal shrinks by
    signal / (signal + noise) power); noise_realisations: with replay noise, how many other
    realisations of it measure the estimate's spread over the replay's own noise, added to
    the intervals (``realisation_spread``; 0: none; each costs one rollout per fitted
    parameter and one more)."""

    max_iters: int = 12
    current_weight: float = 0.0
    identifiable_rel: float = 1e-3
    min_sensitivity_rad: float = 2e-5
    seconds: float | None = None
    replay_noise_rad: float = 0.0
    noise_realisations: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.max_iters, int) or not 1 <= self.max_iters <= 1000:
            raise InvalidValueError("max_iters", self.max_iters, "an integer in 1..1000")
        for name in ("current_weight", "identifiable_rel", "min_sensitivity_rad"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InvalidValueError(name, value, "a finite number >= 0")
        noise = self.replay_noise_rad
        if not (
            isinstance(noise, (int, float))
            and not isinstance(noise, bool)
            and math.isfinite(noise)
            and 0 <= noise <= MAX_REPLAY_NOISE_RAD
        ):
            raise InvalidValueError(
                "replay_noise_rad", noise, f"a finite std in 0..{MAX_REPLAY_NOISE_RAD} rad"
            )
        n_real = self.noise_realisations
        if isinstance(n_real, bool) or not isinstance(n_real, int) or not 0 <= n_real <= 20:
            raise InvalidValueError("noise_realisations", n_real, "an integer in 0..20")
        if noise > 0 and self.current_weight > 0:
            raise InvalidValueError(
                "replay_noise_rad",
                noise,
                "0 when currents are weighed (current_weight "
                f"{self.current_weight}): a noisy replay's currents pull a torque constant "
                "toward zero",
            )


def default_config() -> FitConfig:
    return FitConfig()


@dataclass
class FitResult:
    """values: every fitted name's value [its unit]; start: where the fit began;
    intervals: 95 % half widths on the linear scale (None: not given a number; a delay
    found by search: half its step); interval_bounds: the 95 % intervals [lo, hi] as
    reported (log space for positive kinds, clipped to the bounds; see the module
    docstring); rms_before/rms_after: per recording role ("fit", "validate") per joint RMS
    position error [rad]; evaluations: rollouts of every recording; unweighted: names seen
    only in currents that this fit did not weigh (FitConfig.current_weight 0), held;
    residual: ``residual_stats`` of the fit recordings after the fit; misfit: the misfit
    warnings (``misfit``; empty: none)."""

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
    interval_bounds: dict[str, list[float] | None] = field(default_factory=dict)
    unweighted: list[str] = field(default_factory=list)
    residual: dict = field(default_factory=dict)
    misfit: list[dict] = field(default_factory=list)


# the feedback's position count (1/128 deg) and current step (1/256 drive unit): a
# recording cannot show the twin closer than its quantisation, q / sqrt(12) RMS
CURRENT_QUANTUM = 1.0 / 256.0
POSITION_FLOOR_RAD = POSITION_QUANTUM_RAD / math.sqrt(12.0)
Z95 = 1.959963984540054  # the normal distribution's 97.5 % point
INTERVAL_METHOD = (
    "95 %: Jacobian at the optimum; per parameter the wider of a sandwich covariance "
    "(per-track Newey-West sum of scores, bandwidth from the residual's lag-1 "
    "autocorrelation) and the white-noise one inflated by (1 + rho) / (1 - rho); residual "
    "raised to the quantisation floor q/sqrt(12); the solver's remaining Gauss-Newton step "
    "added in quadrature; log space for positive kinds; clipped to the bounds"
)
# the misfit rules (``misfit``): a value this close to a bound [fraction of the range], a
# residual this many times the quantisation floor, residual structure this strong (lag-1
# autocorrelation of the per-joint residual) while the residual is this many floors
NEAR_BOUND_FRACTION = 0.01
CONVERGED_SIGMA = 0.1  # a step left under this many standard errors: converged
# the finite-difference step [scaled units]: MuJoCo's default, sqrt(machine eps) = 1.5e-8,
# is below a rollout's numerical noise for some parameters (a payload's column came out up
# to 70x too large, its interval 1000x too narrow); 1e-5 of the scale is far above it and
# far below any curvature that matters
FD_STEP = 1e-5
RESIDUAL_FLOOR_RATIO = 10.0
STRUCTURE_LAG1 = 0.9
STRUCTURE_FLOOR_RATIO = 3.0
# kinds that are positive by their physics: their intervals are computed in log space (a
# command delay's is the resolution of its search, held linear)
POSITIVE_KINDS = (
    "armature",
    "damping",
    "frictionloss",
    "kp",
    "lag_s",
    "integral_gain",
    "amps_per_nm",
    "payload_kg",
    "feedback_delay_s",
    "friction_fv",
    "friction_fc",
    "friction_k",
    "kp_scale",
    "kd_scale",
)
# kinds that cannot be negative: a lower bound of 0 is their physical limit, where a value
# or an interval end may honestly sit (no payload, no delay, no friction)
NONNEGATIVE_KINDS = POSITIVE_KINDS + ("command_delay_s",)
# kinds whose only trace is the drives' current: a fit that does not weigh currents
# cannot see them (it is not the recording that fails to excite them)
CURRENT_ONLY_KINDS = ("amps_per_nm",)


@dataclass(frozen=True)
class Segment:
    """One joint track's stretch of the residual vector: rows start..stop, its kind
    ("position" or "current") and the floor of its entries [residual units]: the larger of
    its quantisation and its recorded signal's own noise (``noise_level``)."""

    start: int
    stop: int
    kind: str
    floor: float


def residual_segments(predictions: list[Prediction], current_weight: float) -> list[Segment]:
    """The segments of ``Prediction.residual(current_weight)`` concatenated over
    ``predictions``, in order."""
    out: list[Segment] = []
    i = 0
    for p in predictions:
        pos_q = p.position_quantum_rad / math.sqrt(12.0)
        cur_q = p.current_quantum / math.sqrt(12.0)
        parts = [
            ("position", len(tr.t), max(pos_q, noise_level(tr.position_rec)))
            for tr in p.tracks.values()
        ]
        if current_weight > 0:
            parts += [
                ("current", len(tr.t), current_weight * max(cur_q, noise_level(tr.current_rec)))
                for tr in p.tracks.values()
            ]
        for kind, n, floor in parts:
            out.append(Segment(i, i + n, kind, floor))
            i += n
    return out


def noise_level(recorded: np.ndarray) -> float:
    """The white-noise standard deviation in a recorded signal [its unit], from its second
    differences (which a smooth motion sampled at the feedback rate barely moves, and white
    noise of std s gives a std of s sqrt(6)): 1.4826 x their median absolute deviation /
    sqrt(6), robust to the few steps where the motion turns fast. 0 for fewer than 10
    samples."""
    x = np.asarray(recorded, float)
    if x.size < 10:
        return 0.0
    d2 = x[2:] - 2.0 * x[1:-1] + x[:-2]
    return float(1.4826 * np.median(np.abs(d2 - np.median(d2))) / math.sqrt(6.0))


def _floor(segs: list[Segment]) -> float:
    """The RMS of the segments' floors, each weighted by its length."""
    n = sum(s.stop - s.start for s in segs)
    return math.sqrt(sum((s.stop - s.start) * s.floor**2 for s in segs) / n) if n else 0.0


def _lag1(x: np.ndarray) -> float:
    """Lag-1 autocorrelation of ``x`` about its mean (0 for fewer than 3 values or none
    varying)."""
    if x.size < 3:
        return 0.0
    d = x - x.mean()
    den = float(d @ d)
    return float(d[1:] @ d[:-1]) / den if den > 0 else 0.0


def residual_stats(r: np.ndarray, segments: list[Segment]) -> dict:
    """What the residual ``r`` at the optimum says about the fit: per kind its RMS, its
    quantisation floor and their ratio, and the lag-1 autocorrelation pooled over joint
    tracks (each about its own mean, weighted by its variance), and the effective number of
    independent samples n (1 - rho) / (1 + rho)."""
    out = {}
    for kind in ("position", "current"):
        segs = [s for s in segments if s.kind == kind and s.stop > s.start]
        if not segs:
            continue
        x = np.concatenate([r[s.start : s.stop] for s in segs])
        rms = float(np.sqrt(np.mean(x**2))) if x.size else 0.0
        num = den = 0.0
        for s in segs:
            d = r[s.start : s.stop] - r[s.start : s.stop].mean()
            num += float(d[1:] @ d[:-1])
            den += float(d @ d)
        rho = num / den if den > 0 else 0.0
        floor = _floor(segs)
        out[kind] = {
            "rms": rms,
            "floor": floor,
            "floor_ratio": rms / floor if floor > 0 else math.inf,
            "lag1": rho,
            "samples": int(x.size),
            "effective_samples": float(x.size * (1 - rho) / (1 + rho)) if rho < 1 else 0.0,
        }
    return out


def interval_halfwidths(
    r: np.ndarray, jac: np.ndarray, segments: list[Segment], step: np.ndarray | None = None
) -> np.ndarray:
    """95 % half widths of the parameters whose Jacobian (rows: the residual ``r``) is
    ``jac``, in ``jac``'s units (see the module docstring): the residual of each kind raised
    to its quantisation floor first, the wider per parameter of two covariances for
    correlated residuals, a sandwich whose middle sums each track's scores ``jac_t r_t``
    with their lags (Bartlett weights, the bandwidth from the track's lag-1
    autocorrelation) and the white-noise one with each kind's variance times
    (1 + rho) / (1 - rho); ``step`` (the Gauss-Newton step left at the optimum, when given)
    is added in quadrature. NaN for a parameter the Jacobian does not determine."""
    n, p = jac.shape
    if p == 0:
        return np.zeros(0)
    r = np.asarray(r, float).copy()
    for kind in ("position", "current"):  # raise each kind's residual to its floor
        segs = [s for s in segments if s.kind == kind and s.stop > s.start]
        if not segs:
            continue
        x = np.concatenate([r[s.start : s.stop] for s in segs])
        rms = float(np.sqrt(np.mean(x**2))) if x.size else 0.0
        floor = _floor(segs)
        if floor > 0 and rms < floor:
            for s in segs:
                seg = r[s.start : s.stop]
                if rms > 0:
                    seg *= floor / rms
                else:
                    seg[:] = floor * np.where(np.arange(seg.size) % 2, 1.0, -1.0)
    meat = np.zeros((p, p))
    for s in segments:
        g = jac[s.start : s.stop] * r[s.start : s.stop, None]
        m = g.shape[0]
        if m == 0:
            continue
        meat += g.T @ g
        rho = min(abs(_lag1(r[s.start : s.stop])), 0.99)
        alpha = 4 * rho**2 / ((1 - rho) ** 2 * (1 + rho) ** 2)
        lags = min(int(math.ceil(1.1447 * (alpha * m) ** (1 / 3))) + 1, max(m // 4, 1))
        for lag in range(1, lags + 1):
            c = g[lag:].T @ g[:-lag]
            meat += (1 - lag / (lags + 1)) * (c + c.T)
    # the effective-sample-size form: each kind's residual variance times
    # (1 + rho) / (1 - rho), rho its lag-1 autocorrelation pooled over tracks
    ess = np.zeros((p, p))
    for kind in ("position", "current"):
        segs = [s for s in segments if s.kind == kind and s.stop > s.start]
        if not segs:
            continue
        rows = np.concatenate([np.arange(s.start, s.stop) for s in segs])
        num = den = 0.0
        for s in segs:
            d = r[s.start : s.stop] - r[s.start : s.stop].mean()
            num += float(d[1:] @ d[:-1])
            den += float(d @ d)
        rho = min(max(num / den if den > 0 else 0.0, 0.0), 0.99)
        s2 = float(r[rows] @ r[rows]) / max(rows.size - p, 1)
        ess += s2 * (1 + rho) / (1 - rho) * (jac[rows].T @ jac[rows])
    h = jac.T @ jac
    lam, v = np.linalg.eigh(h)
    top = float(lam.max()) if lam.size else 0.0
    keep = lam > 1e-12 * top if top > 0 else np.zeros_like(lam, bool)
    inv = (v[:, keep] / lam[keep]) @ v[:, keep].T
    var = np.maximum(np.diag(inv @ meat @ inv), np.diag(inv @ ess @ inv))
    # a parameter along a direction the Jacobian does not see has no finite interval
    blind = np.abs(v[:, ~keep]).max(axis=1) > 1e-6 if (~keep).any() else np.zeros(p, bool)
    half = Z95 * np.sqrt(np.maximum(var, 0.0))
    if step is not None:
        half = np.sqrt(half**2 + np.asarray(step, float) ** 2)
    half[blind] = np.nan
    return half


def bounded_interval(name: str, value: float, half: float, bounds: Bounds) -> dict:
    """The 95 % interval of ``name`` at ``value`` with half width ``half`` [its unit]: for a
    kind positive by its physics and a value > 0, in log space (value * exp(+-half/value):
    never below 0); then clipped to ``bounds``. ``raw``: before the clip; ``clipped``: the
    clip moved an end."""
    kind = parse_name(name).kind
    if kind in POSITIVE_KINDS and value > 0:
        k = min(half / value, 50.0)
        lo, hi = value * math.exp(-k), value * math.exp(k)
    else:
        lo, hi = value - half, value + half
    clo, chi = max(lo, bounds.lower), min(hi, bounds.upper)
    return {"interval": [clo, chi], "raw": [lo, hi], "clipped": (clo, chi) != (lo, hi)}


def misfit(
    values: dict[str, float],
    bounds: dict[str, Bounds],
    intervals: dict[str, dict],
    stats: dict,
    fitted: list[str],
) -> list[dict]:
    """The signs that the twin cannot explain the recordings with the fitted parameters
    (each ``{"rule", "parameter", "message"}``; the rules are the module docstring's)."""
    out = []
    for n in fitted:
        b, v = bounds[n], values[n]
        span = b.upper - b.lower
        kind = parse_name(n).kind
        physical_zero = b.lower == 0.0 and kind in NONNEGATIVE_KINDS
        near_lo = v - b.lower <= NEAR_BOUND_FRACTION * span and not physical_zero
        near_hi = b.upper - v <= NEAR_BOUND_FRACTION * span
        if near_lo or near_hi:
            which = "lower" if near_lo else "upper"
            out.append(
                {
                    "rule": "on_bound",
                    "parameter": n,
                    "message": f"{n} = {v:.6g} is on its {which} bound "
                    f"[{b.lower:.6g}, {b.upper:.6g}]: the fit wants it beyond, a sign that "
                    "something the fit holds (or does not model) is wrong",
                }
            )
        ci = intervals.get(n)
        outside = ci is not None and (
            ci["raw"][1] > b.upper or (ci["raw"][0] < b.lower and not physical_zero)
        )
        if outside:
            lo, hi = ci["raw"]
            out.append(
                {
                    "rule": "interval_outside_bounds",
                    "parameter": n,
                    "message": f"{n}: its 95 % interval [{lo:.6g}, {hi:.6g}] leaves its bounds "
                    f"[{b.lower:.6g}, {b.upper:.6g}] (shown clipped)",
                }
            )
    for kind, st in stats.items():
        if st["floor_ratio"] > RESIDUAL_FLOOR_RATIO:
            unit = "rad" if kind == "position" else "weighted units"
            out.append(
                {
                    "rule": "residual_above_floor",
                    "parameter": None,
                    "message": f"the {kind} residual after the fit, {st['rms']:.3g} {unit} RMS, "
                    f"is {st['floor_ratio']:.1f}x the recording's floor (quantisation or noise) "
                    f"({st['floor']:.3g} {unit}; more than {RESIDUAL_FLOOR_RATIO:g}x): the "
                    "fitted twin does not explain the recordings",
                }
            )
        if st["lag1"] > STRUCTURE_LAG1 and st["floor_ratio"] > STRUCTURE_FLOOR_RATIO:
            out.append(
                {
                    "rule": "residual_structure",
                    "parameter": None,
                    "message": f"the {kind} residual is smooth in time (lag-1 autocorrelation "
                    f"{st['lag1']:.2f} > {STRUCTURE_LAG1:g}, at {st['floor_ratio']:.1f}x the "
                    "quantisation floor): a motion the fitted twin does not make, not "
                    "measurement noise",
                }
            )
    return out


def unresolved_transitions(
    names: list[str], values: dict[str, float], robot: Robot
) -> dict[str, str]:
    """{name: why} for each ``friction_k`` in ``names`` whose tanh transition (speeds within
    1 / k [rad/s] of zero, at its value in ``values``) is narrower than one count of its
    drive's reported speed (2 VMAX / 4095 rad/s, 12 bits: 22 / 4.9 / 14.7 mrad/s on a
    DM8009 / DM4340 / DM4310): a bus recording cannot show a speed inside it, and a fit
    of k there follows the drive noise. Simulated, OpenArm, 0.02 N m torque noise, 30 s
    recordings: left J5 (1 / k 6.0 mrad/s on a DM4310) came out 6.3 % off and J6 (3.9 mrad/s)
    17.5 % off with an interval excluding the truth; 19 % and 22 % off, both excluded, with
    the drive noise modelled in the replay. Such a k is held at its start and named."""
    from rob_twin.twin.calibration.predict import damiao_scalings

    if robot.family != "damiao":
        return {}
    scalings = damiao_scalings(robot)
    out: dict[str, str] = {}
    for n in names:
        p = parse_name(n)
        if p.kind != "friction_k" or p.joint is None or not values[n] > 0:
            continue
        count = scalings[p.joint - 1].step("dq")
        width = 1.0 / values[n]
        if width < count:
            out[n] = (
                f"{n}: not identifiable: its tanh transition (1 / k = {1e3 * width:.1f} mrad/s "
                f"at k = {values[n]:.4g} s/rad) is narrower than one count of the drive's "
                f"reported speed ({1e3 * count:.1f} mrad/s), so a bus recording cannot show it; "
                "held at its start"
            )
    return out


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


def _gauss_newton(x, r, jac, lower, upper, floor) -> tuple[np.ndarray, np.ndarray] | None:
    """(the Gauss-Newton step from ``x``, kept inside ``lower``..``upper``; each parameter's
    white-noise standard error, the residual no smaller than ``floor``), in ``x``'s units;
    None when the Jacobian cannot give them."""
    n, p = jac.shape
    if n <= p or not np.all(np.isfinite(jac)):
        return None
    try:
        step = -np.linalg.lstsq(jac, r, rcond=None)[0]
        inv = np.linalg.pinv(jac.T @ jac)
    except (np.linalg.LinAlgError, ValueError):
        return None
    step = np.clip(x + step, lower, upper) - x
    s2 = max(float(r @ r) / (n - p), floor**2)
    return step, np.sqrt(np.maximum(np.diag(inv), 0.0) * s2)


def realisation_spread(
    residual_of: Callable[[dict[str, float], int], np.ndarray],
    values: dict[str, float],
    scale: dict[str, float],
    bounds: dict[str, Bounds],
    realisations: int,
) -> np.ndarray:
    """The standard deviation of each parameter named in ``scale`` over the replay's own
    noise, in units of its scale: for each of ``realisations`` other realisations r
    (``residual_of(values, r)``, r = 1, 2, ...) the Gauss-Newton step from the fitted
    ``values`` (a forward-difference Jacobian, ``FD_STEP`` of each scale, backward at an
    upper bound), which is how far a fit with that realisation would land from this one;
    two fits' estimates differ by sqrt(2) of one's spread, so the spread is the steps'
    root mean square over sqrt(2). A fit that replays with noise compares one realisation
    with the recording's, and its residual's variance does not carry what that choice does
    to a parameter seen through the noise's dither (a friction): simulated, ROB, 60 s, the
    steps were 0.04-0.35 % of a friction loss whose interval was +-0.24-0.49 %."""
    names = list(scale)
    steps = []
    for r in range(1, realisations + 1):
        r0 = residual_of(values, r)
        cols = []
        for n in names:
            h = FD_STEP * scale[n]
            if values[n] + h > bounds[n].upper:
                h = -h
            cols.append((residual_of(values | {n: values[n] + h}, r) - r0) / (h / scale[n]))
        jac = np.stack(cols, axis=1)
        steps.append(np.linalg.lstsq(jac, r0, rcond=None)[0])
    return np.sqrt(np.mean(np.square(steps), axis=0) / 2.0)


class _Converged(Exception):
    """The fit has converged (``_least_squares``): stop the solver where it stands."""


def _least_squares(values, free, bounds, fit_recs, run, config, say, floor=POSITION_FLOOR_RAD):
    """MuJoCo's bounded least squares (``mujoco.sysid.optimize``) over ``free`` in scaled
    units, from ``values``: (values with the fitted ones, the scaled point x, the
    finite-difference Jacobian and the residual at x, the scales).

    The Jacobian is ``mujoco.minimize.jacobian_fd``'s with a step of ``FD_STEP`` (not its
    default), passed in so that the fit knows where
    each iteration starts, and stops there as converged when (a) the Gauss-Newton step left
    (kept inside the bounds) moves every parameter by at most ``CONVERGED_SIGMA`` of its
    standard error (white noise, the residual no smaller than its quantisation floor): what
    is left is far inside its interval; or (b) the solver, its steps failing to lower the
    cost, has shrunk them that small (it would go on raising its regulariser up to 1e8 in
    steps of 10^0.1, a hundred rollouts or more, before it gave up). Without them the
    rollouts a fit took hung on the last bits of its residual: a recording and the same
    data read from a dataset took 161 and 67 rollouts to the same values."""
    from mujoco import minimize, sysid

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

    def residual_fn(x: np.ndarray) -> np.ndarray:
        cols = x.reshape(len(free), -1)
        out = []
        for k in range(cols.shape[1]):
            preds = run(values_of(cols[:, k]), fit_recs)
            out.append(np.concatenate([p.residual(config.current_weight) for p in preds]))
        say(f"calibrate: {cols.shape[1]} rollout(s)")
        return np.stack(out, axis=1) if np.ndim(x) == 2 else out[0]  # columns in, columns out

    state: dict = {"x": None, "r": None, "jac": None, "sigma": None}

    def trial(x: np.ndarray) -> np.ndarray:
        if state["sigma"] is not None:  # a step from the iteration's point
            dx = np.asarray(x, float).reshape(-1) - state["x"]
            if np.all(np.abs(dx) <= CONVERGED_SIGMA * state["sigma"]):
                state["why"] = (
                    f"its trial steps shrank under {CONVERGED_SIGMA:g} standard error "
                    "without lowering the cost"
                )
                raise _Converged
        return residual_fn(x)

    lower, upper = params.get_bounds()
    fd_bounds = [lower.reshape(-1, 1), upper.reshape(-1, 1)]

    def jacobian(x: np.ndarray, r: np.ndarray) -> np.ndarray:
        jac, _ = minimize.jacobian_fd(residual_fn, x, r, FD_STEP, 0, fd_bounds)
        state.update(x=np.array(x, float).reshape(-1), r=np.array(r, float).reshape(-1))
        state["jac"], state["sigma"] = jac, None
        gn = _gauss_newton(state["x"], state["r"], jac, lower, upper, floor)
        if gn is not None:
            step, state["sigma"] = gn
            if np.all(np.abs(step) <= CONVERGED_SIGMA * state["sigma"]):
                state["why"] = f"the step left is under {CONVERGED_SIGMA:g} standard error"
                raise _Converged
        return jac

    params.move_off_bounds()  # a start on a bound (no payload, no friction) can stall
    solver_log = io.StringIO()  # the solver prints its iterations: pass them to progress
    try:
        with contextlib.redirect_stdout(solver_log):
            sysid.optimize(
                params,
                lambda x, _params: ([trial(x)], [], []),
                optimizer="mujoco",
                verbose=False,
                max_iters=config.max_iters,
                jacobian=jacobian,
            )
    except _Converged:
        pass
    for line in solver_log.getvalue().splitlines():
        if line.strip():
            say(f"calibrate: solver {line.strip()}")
    if state.get("why"):
        say(f"calibrate: solver converged: {state['why']}")
    x = state["x"]
    return values_of(x), x, state["jac"], state["r"], scale


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
    robot = robot_of(robot)
    config = config or default_config()
    say = progress or (lambda _line: None)
    if not names:
        raise FitError("nothing to fit: select at least one parameter (--fit)")
    check_family(dict.fromkeys(names, 0.0), robot)  # unknown kinds, or another family's
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

    def run(
        values: dict[str, float], recs: list[Recording], realisation: int = 0
    ) -> list[Prediction]:
        nonlocal evaluations
        evaluations += 1
        return [
            predict(
                r,
                values,
                seconds=config.seconds,
                robot=robot,
                drive_noise_rad=config.replay_noise_rad,
                noise_realisation=realisation,
            )
            for r in recs
        ]

    before = run(base, fit_recs)
    floor = quanta(robot)[0] / math.sqrt(12.0)  # the feedback's position floor [rad]
    cost_before = _cost(before, config.current_weight)
    segments = residual_segments(before, config.current_weight)
    n_recs = len(fit_recs)
    say(f"calibrate: start, RMS residual {1000 * cost_before:.3f} mrad over {n_recs} recording(s)")
    values = dict(base)
    intervals: dict[str, float | None] = {}
    notes: list[str] = []
    not_identifiable: list[str] = []
    flat: list[str] = []  # excited at the start, flat at the optimum
    unweighted = [
        n
        for n in names
        if parse_name(n).kind in CURRENT_ONLY_KINDS and not config.current_weight > 0
    ]
    if unweighted:
        for n in unweighted:
            intervals[n] = None
        notes.append(
            "not fitted, held at the start: "
            + ", ".join(unweighted)
            + ": a torque constant shows only in the drives' current feedback, and this fit "
            "weighs currents 0 (positions only): fit it with --current-weight W "
            "(FitConfig.current_weight > 0)"
        )

    def search_delay(name: str, values: dict[str, float]) -> tuple[float | None, int]:
        """The delay ``name`` [s] that fits best with ``values``: whole 5 ms over its bounds,
        then whole ms around the best (None: the recordings do not show it), and how many
        delays were tried."""
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
            return None, len(scores)
        return min(scores, key=scores.get), len(scores)

    # 0. a tanh friction transition narrower than the drive's speed count: not resolved
    for name, why in unresolved_transitions(names, base, robot).items():
        not_identifiable.append(name)
        intervals[name] = None
        notes.append(why)
        say(f"calibrate: {why}")

    # 1. command delays: a search over whole milliseconds (the replay moves frames by steps)
    for name in [n for n in names if parse_name(n).kind == "command_delay_s"]:
        found, tried = search_delay(name, values)
        if found is None:
            not_identifiable.append(name)
            intervals[name] = None
            say(f"calibrate: {name}: the recordings do not show it (no motion to delay)")
            continue
        values[name] = found
        intervals[name] = 0.0005  # half a physics step: the search's resolution
        say(f"calibrate: {name} = {1000 * values[name]:.0f} ms (search over {tried} delays)")

    # 1b. a feedback delay without its arm's command delay: the same search gives the least
    # squares its start (the residual ripples with the commands' 5 ms staircase, so a
    # solver started at 0 ms can settle in the wrong ripple: 12.7 ms for 14), which then
    # refines it (a feedback delay moves the comparison, not the frames: continuous)
    commanded = {parse_name(n).arm for n in names if parse_name(n).kind == "command_delay_s"}
    fb_searched = [
        n
        for n in names
        if parse_name(n).kind == "feedback_delay_s" and parse_name(n).arm not in commanded
    ]

    for name in fb_searched:
        found, _ = search_delay(name, values)
        if found is not None:
            values[name] = found
            say(f"calibrate: {name} starts at {1000 * found:.0f} ms (search)")

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
        n
        for n in names
        if parse_name(n).kind != "command_delay_s"
        and n not in not_identifiable
        and n not in unweighted
    ]
    delay_names = [n for n in names if n in intervals and intervals[n] is not None]
    if free:
        values, x, jac, r_star, scale = _least_squares(
            values, free, bounds, fit_recs, run, config, say, floor
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
            for name in fb_searched:  # searched again with the fitted parameters
                found, _ = search_delay(name, values)
                if found is not None and abs(found - values[name]) > 0.0015:
                    say(f"calibrate: {name} -> {1000 * found:.0f} ms with the fitted parameters")
                    values[name], moved = found, True
            if not moved:
                break
            values, x, jac, r_star, scale = _least_squares(
                values, free, bounds, fit_recs, run, config, say, floor
            )
        jac = np.atleast_2d(np.asarray(jac, float))
        norms = np.linalg.norm(jac, axis=0) if jac.size else np.zeros(len(free))
        top = float(norms.max()) if norms.size else 0.0
        rms_sensitivity = norms / math.sqrt(max(jac.shape[0], 1))
        seen = [
            i
            for i in range(len(free))
            if top > 0.0
            and rms_sensitivity[i] >= config.min_sensitivity_rad
            and norms[i] >= config.identifiable_rel * top
        ]
        half = np.full(len(free), np.nan)
        if seen and jac.shape[0] == r_star.size:
            j_seen = jac[:, seen]
            try:
                step = np.linalg.lstsq(j_seen, r_star, rcond=None)[0]
                half[seen] = interval_halfwidths(r_star, j_seen, segments, step=step)
            except (np.linalg.LinAlgError, ValueError) as err:
                notes.append(f"confidence intervals not computed: {err}")
            if config.replay_noise_rad > 0 and config.noise_realisations > 0:
                names_seen = [free[i] for i in seen]
                spread = realisation_spread(
                    lambda vals, r: np.concatenate(
                        [p.residual(config.current_weight) for p in run(vals, fit_recs, r)]
                    ),
                    values,
                    {n: scale[n] for n in names_seen},
                    {n: bounds[n] for n in names_seen},
                    config.noise_realisations,
                )
                half[seen] = np.sqrt(half[seen] ** 2 + (Z95 * spread) ** 2)
                notes.append(
                    "intervals include the estimate's spread over the replay's own noise ("
                    f"{config.noise_realisations} other realisations): "
                    + ", ".join(f"{n} {spread[i] * scale[n]:.3g}" for i, n in enumerate(names_seen))
                )
        for i, n in enumerate(free):
            if i not in seen:
                not_identifiable.append(n)
                flat.append(n)
                intervals[n] = None
            else:
                h = float(half[i]) * scale[n]
                intervals[n] = h if math.isfinite(h) else None
    after = run(values, fit_recs)
    cost_after = _cost(after, config.current_weight)
    moved = [n for n in flat if values[n] != base[n]]
    if moved:  # back to its start, unless the recordings show the move (a flat optimum)
        held = values | {n: base[n] for n in flat}
        again = run(held, fit_recs)
        if _cost(again, config.current_weight) <= cost_after * (1 + 1e-4):
            values, after, cost_after = held, again, _cost(again, config.current_weight)
        else:
            notes.append(
                "held where the fit took them, without an interval: "
                + ", ".join(f"{n} = {values[n]:.6g}" for n in moved)
                + ": the recordings need them moved from their start, but do not bound them "
                "there (flat: a joint friction that holds its joint still, for instance)"
            )
    else:
        values |= {n: base[n] for n in flat}
    say(f"calibrate: done, RMS residual {1000 * cost_after:.3f} mrad ({evaluations} rollouts)")
    rms_before, rms_after = {"fit": _rms(before)}, {"fit": _rms(after)}
    if val_recs:
        rms_before["validate"] = _rms(run(base, val_recs))
        rms_after["validate"] = _rms(run(values, val_recs))
    final = after
    if cost_after > cost_before:
        notes.append("the fit did not lower the residual: the start values are kept")
        values, final = dict(base), before
    if not_identifiable:
        notes.append(
            "not identifiable from these recordings (no excitation): " + ", ".join(not_identifiable)
        )
    r_final = np.concatenate([p.residual(config.current_weight) for p in final])
    stats = (
        residual_stats(r_final, segments)
        if r_final.size == (segments[-1].stop if segments else 0)
        else {}
    )
    interval_bounds: dict[str, list[float] | None] = {}
    shown: dict[str, dict] = {}
    for n in names:
        h = intervals.get(n)
        if h is None:
            interval_bounds[n] = None
            continue
        shown[n] = bounded_interval(n, values[n], h, bounds[n])
        interval_bounds[n] = shown[n]["interval"]
    fitted = [n for n in names if n not in not_identifiable and n not in unweighted]
    warnings = misfit(values, bounds, shown, stats, fitted)
    for w in warnings:
        say(f"calibrate: MISFIT {w['rule']}: {w['message']}")
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
        interval_bounds=interval_bounds,
        unweighted=unweighted,
        residual=stats,
        misfit=warnings,
    )
