"""Excitation trajectories for system identification: multi-sine joint motions, at rest at
both ends, within a fraction of each joint's range and the planning limits.

Each joint i of the stacked moving arms follows

    q_i(t) = q0_i + e(t) * (d_i + x_i(t)),   x_i(t) = sum_k a_ik sin(2 pi f_k t + phi_ik)

- ``q0``: the start pose; ``e(t)``: an envelope that rises from 0 to 1 over ``ramp_s``, holds
  1, and falls back to 0 over the last ``ramp_s`` (the septic smoothstep: e, e', e'' and e'''
  vanish at both ends, so the motion starts and ends at rest with zero jerk at the start
  pose);
- ``d``: from the start to the centre of the joint's *window*, ``fraction`` of its range
  centred on the start and cut at the joint limits (a start at a limit still moves);
- ``x``: a multi-sine of harmonics of ``1 / period_s`` up to ``max_frequency_hz``,
  interleaved (joint i uses the harmonics k = i mod ``interleave`` + 1 + m * ``interleave``,
  so no two joints of an arm share one and their responses can be told apart), unit
  amplitudes 1/k^2 (a flat acceleration spectrum: the jerk limit leaves the low harmonics
  their range), phases drawn from the seed.

Each joint's amplitudes are then scaled by the largest factor that keeps, on a dense grid
(``dense_hz``), the position inside the window and |qd|, |qdd|, |qddd| within ``headroom``
times the group's velocity, acceleration and jerk limits (q^(n) = A_n + s B_n is affine in
the factor s, so the largest s is exact on the grid). Since q(t) is a convex combination of
q0 and the window's centre plus x, it never leaves the window.

Units: radians, seconds, hertz.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rob_twin.models.errors import InvalidValueError
from rob_twin.planners.errors import PlannerError
from rob_twin.planners.retime import JointLimits

MAX_EXCITATION_S = 150.0  # 18,751 samples at 125 Hz: under the plan file's 20,000


class ExcitationError(PlannerError, InvalidValueError):
    """An excitation setting, or a motion it asks for, outside the valid range; ``field``
    names it (a setting, or ``<joint> velocity`` ...), ``value`` and ``valid`` say how."""

    subject = "excitation"


@dataclass(frozen=True)
class ExcitationConfig:
    """How the excitation is built (validated on construction, ExcitationError otherwise).

    - seconds: the whole motion, ramps included [s], in [2 ramp_s + 1, 150].
    - fraction: share of each joint's range [-] the window spans, in (0, 1].
    - period_s: base period [s]; harmonics of 1 / period_s, in [1, 600].
    - max_frequency_hz: highest harmonic [Hz], in (0, 10].
    - ramp_s: rise and fall of the envelope [s], in [0.2, 30].
    - headroom: share of the planning limits [-] the motion may use, in (0, 1].
    - interleave: joints that never share a harmonic [count], in [1, 16].
    - dense_hz: grid the limits are enforced on [Hz], in [250, 20000].
    """

    seconds: float = 60.0
    fraction: float = 0.3
    period_s: float = 10.0
    max_frequency_hz: float = 2.0
    ramp_s: float = 1.5
    headroom: float = 0.95
    interleave: int = 7
    dense_hz: float = 1000.0

    def __post_init__(self) -> None:
        def need(name: str, ok: bool, valid: str) -> None:
            value = getattr(self, name)
            if isinstance(value, bool) or not ok:
                raise ExcitationError(name, value, valid)

        def real(name: str) -> float:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ExcitationError(name, value, "a real number")
            if not math.isfinite(value):
                raise ExcitationError(name, value, "a finite number")
            return float(value)

        need("ramp_s", 0.2 <= real("ramp_s") <= 30.0, "in [0.2, 30] s")
        low = 2 * self.ramp_s + 1.0
        need(
            "seconds",
            low <= real("seconds") <= MAX_EXCITATION_S,
            f"in [{low:g}, {MAX_EXCITATION_S:g}] s (two ramps of {self.ramp_s:g} s and at "
            "least 1 s between them; at most what one plan file holds)",
        )
        need("fraction", 0.0 < real("fraction") <= 1.0, "in (0, 1] of each joint's range")
        need("period_s", 1.0 <= real("period_s") <= 600.0, "in [1, 600] s")
        need("max_frequency_hz", 0.0 < real("max_frequency_hz") <= 10.0, "in (0, 10] Hz")
        need("headroom", 0.0 < real("headroom") <= 1.0, "in (0, 1] of the planning limits")
        need("dense_hz", 250.0 <= real("dense_hz") <= 20000.0, "in [250, 20000] Hz")
        need(
            "interleave",
            isinstance(self.interleave, int) and 1 <= self.interleave <= 16,
            "an integer in [1, 16]",
        )


def default_config() -> ExcitationConfig:
    """60 s with 1.5 s ramps, 30 % of each joint's range, harmonics of 0.1 Hz up to 2 Hz,
    95 % of the planning limits, seven interleaved joints, limits enforced at 1 kHz."""
    return ExcitationConfig()


@dataclass(frozen=True)
class MultiSinePath:
    """The excitation of the stacked moving arms (see the module docstring): ``start``,
    ``offset`` (d) (n,) [rad]; ``amplitudes`` [rad], ``frequencies_hz`` and ``phases`` [rad]
    (n, K), zero amplitude where a joint has fewer than K harmonics; ``ramp_s`` and
    ``duration`` [s]. Duck-types ``rob_twin.planners.retime.TimedPath`` for the final check
    and the certificate (``duration``, ``evaluate``)."""

    start: np.ndarray
    offset: np.ndarray
    amplitudes: np.ndarray
    frequencies_hz: np.ndarray
    phases: np.ndarray
    ramp_s: float
    total_s: float

    @property
    def duration(self) -> float:
        return self.total_s

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, qd, qdd), each (len(t), n), at times ``t`` [s] (clamped: rest outside)."""
        q, qd, qdd, _ = self.derivatives(t)
        return q, qd, qdd

    def derivatives(self, t: np.ndarray) -> tuple[np.ndarray, ...]:
        """(q, qd, qdd, qddd) at times ``t`` [s], each (len(t), n) [rad, /s, /s^2, /s^3]."""
        t = np.clip(np.asarray(t, float).ravel(), 0.0, self.total_s)
        e = envelope(t, self.ramp_s, self.total_s)
        x = _multisine(t, self.amplitudes, self.frequencies_hz, self.phases)
        y = [self.offset[None, :] + x[0], *x[1:]]
        out = [self.start[None, :] + e[0][:, None] * y[0]]
        binomial = ((1, 1), (1, 2, 1), (1, 3, 3, 1))
        for n, coeff in enumerate(binomial, start=1):
            out.append(sum(c * e[n - k][:, None] * y[k] for k, c in enumerate(coeff)))
        return tuple(out)


def envelope(t: np.ndarray, ramp_s: float, total_s: float) -> tuple[np.ndarray, ...]:
    """(e, e', e'', e''') of the envelope at ``t`` [s]: septic smoothstep up over
    [0, ramp_s], 1, down over [total_s - ramp_s, total_s]; 0 outside [0, total_s]."""
    t = np.asarray(t, float)
    out = [np.ones_like(t), np.zeros_like(t), np.zeros_like(t), np.zeros_like(t)]
    for rising in (True, False):
        u = t / ramp_s if rising else (total_s - t) / ramp_s
        inside = (u >= 0) & (u < 1)
        out_side = u < 0
        s = _smoothstep(np.clip(u, 0.0, 1.0))
        sign = 1.0 if rising else -1.0
        for n in range(4):
            value = s[n] / ramp_s**n * sign**n
            out[n] = np.where(inside, value, out[n])
            out[n] = np.where(out_side, 0.0, out[n])
    return tuple(out)


def _smoothstep(u: np.ndarray) -> tuple[np.ndarray, ...]:
    """35u^4 - 84u^5 + 70u^6 - 20u^7 and its first three derivatives in u."""
    return (
        u**4 * (35 - 84 * u + 70 * u**2 - 20 * u**3),
        u**3 * (140 - 420 * u + 420 * u**2 - 140 * u**3),
        u**2 * (420 - 1680 * u + 2100 * u**2 - 840 * u**3),
        u * (840 - 5040 * u + 8400 * u**2 - 4200 * u**3),
    )


def _multisine(t, amplitudes, frequencies_hz, phases) -> list[np.ndarray]:
    """x and its first three time derivatives at ``t``, each (len(t), n)."""
    w = 2 * np.pi * frequencies_hz  # (n, K) [rad/s]
    arg = t[:, None, None] * w[None] + phases[None]  # (T, n, K)
    s, c = np.sin(arg), np.cos(arg)
    a = amplitudes[None]
    return [
        (a * s).sum(-1),
        (a * w * c).sum(-1),
        -(a * w**2 * s).sum(-1),
        -(a * w**3 * c).sum(-1),
    ]


def harmonics(index: int, config: ExcitationConfig) -> np.ndarray:
    """The harmonic numbers k of stacked joint ``index`` (frequency k / period_s)."""
    f0 = 1.0 / config.period_s
    first = index % config.interleave + 1
    ks = np.arange(first, int(config.max_frequency_hz / f0 + 1e-9) + 1, config.interleave)
    return ks.astype(float)


def window(
    start: np.ndarray, lower: np.ndarray, upper: np.ndarray, fraction: float
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) [rad] of each joint's window: ``fraction`` of its range centred on
    ``start``, cut at the limits."""
    half = fraction * (upper - lower) / 2.0
    return np.maximum(lower, start - half), np.minimum(upper, start + half)


def excitation_path(
    start: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    limits: JointLimits,
    names: tuple[str, ...],
    config: ExcitationConfig | None = None,
    seed: int = 0,
) -> MultiSinePath:
    """The multi-sine excitation of the stacked joints ``names`` from ``start`` (n,) [rad]
    within ``lower``/``upper`` [rad] and ``limits`` (velocity, acceleration, jerk), scaled
    as the module docstring says; ``seed`` draws the phases. ExcitationError when a joint
    has no harmonic below ``max_frequency_hz``, the start is outside its limits, or the
    ramp to the window's centre alone exceeds a limit (a longer ramp or a smaller fraction
    then fits)."""
    config = config or default_config()
    start = np.asarray(start, float)
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    n = start.size
    for i in range(n):
        if not lower[i] - 1e-9 <= start[i] <= upper[i] + 1e-9:
            raise ExcitationError(
                f"{names[i]} start", float(start[i]), f"[{lower[i]:.4g}, {upper[i]:.4g}] rad"
            )
    lo, hi = window(start, lower, upper, config.fraction)
    centre, half = (lo + hi) / 2.0, (hi - lo) / 2.0
    ks = [harmonics(i, config) for i in range(n)]
    width = max(k.size for k in ks)
    if min(k.size for k in ks) == 0:
        i = min(range(n), key=lambda j: ks[j].size)
        raise ExcitationError(
            "max_frequency_hz",
            config.max_frequency_hz,
            f">= {(i % config.interleave + 1) / config.period_s:g} Hz (the lowest harmonic of "
            f"{names[i]} with period {config.period_s:g} s and {config.interleave} interleaved "
            "joints)",
        )
    rng = np.random.default_rng(seed)
    amps, freqs = np.zeros((n, width)), np.zeros((n, width))
    phases = rng.uniform(0.0, 2 * np.pi, (n, width))
    for i, k in enumerate(ks):
        amps[i, : k.size] = k**-2.0
        freqs[i, : k.size] = k / config.period_s
    unit = MultiSinePath(start, np.zeros(n), amps, freqs, phases, config.ramp_s, config.seconds)
    grid = np.linspace(0.0, config.seconds, int(config.seconds * config.dense_hz) + 1)
    e = envelope(grid, config.ramp_s, config.seconds)
    ramp_only = [e[k][:, None] * (centre - start)[None, :] for k in range(4)]  # A_n
    moved = unit.derivatives(grid)  # start + B_n (the unit multi-sine, no offset)
    bounds = {
        1: ("velocity", "rad/s", limits.velocity),
        2: ("acceleration", "rad/s^2", limits.acceleration),
        3: ("jerk", "rad/s^3", limits.jerk),
    }
    x = _multisine(grid, amps, freqs, phases)[0]
    scale = half / np.maximum(np.max(np.abs(x), axis=0), 1e-12)
    for order, (what, unit_name, limit) in bounds.items():
        cap = config.headroom * np.asarray(limit, float)
        a, b = ramp_only[order], moved[order]
        peak = np.max(np.abs(a), axis=0)
        over = np.flatnonzero(peak > cap)
        if over.size:
            i = int(over[0])
            raise ExcitationError(
                f"{names[i]} {what}",
                f"{peak[i]:.4g} {unit_name} on the ramp to the window's centre",
                f"<= {cap[i]:.4g} {unit_name} ({config.headroom:g} of the limit): a longer "
                "ramp or a smaller fraction",
            )
        room = np.where(b > 0, cap[None, :] - a, cap[None, :] + a)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(np.abs(b) > 1e-12, room / np.abs(b), np.inf)
        scale = np.minimum(scale, ratio.min(axis=0))
    return MultiSinePath(
        start.copy(),
        centre - start,
        amps * scale[:, None],
        freqs,
        phases,
        config.ramp_s,
        config.seconds,
    )
