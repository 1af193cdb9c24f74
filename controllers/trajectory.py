"""A multi-arm timed trajectory as plain arrays on one shared time base (no mujoco).

``MultiArmTrajectory.from_arrays({arm: (t, q, qd, qdd)})`` validates what an executor is
handed: every arm on the *same* time base ``t`` [s] (finite, strictly increasing; a single
sample is a zero-length plan, duration 0: hold where you are), q [rad],
qd [rad/s], qdd [rad/s^2] each (N, n) and finite, n the arm's joint count (``joints``:
seven unless given, e.g. by the executor from each arm's owner). Caller mistakes raise
typed errors that name the arm and the field. ``sample(arm, tau)`` evaluates one arm at
plan time ``tau`` [s from the first sample] with a quintic Hermite between samples (q, qd,
qdd match the samples exactly, C2 in between); outside [0, duration] it holds the end
state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import JOINTS_PER_ARM, Arm

FIELDS = ("t", "q", "qd", "qdd")


class TrajectoryError(RobTwinError, ValueError):
    """A trajectory the executor refuses: ``arm`` (or None), ``field``, ``value``, ``valid``."""

    def __init__(self, arm: Arm | None, field: str, value: object, valid: str):
        self.arm, self.field, self.value, self.valid = arm, field, value, valid
        where = f"arm {arm.value!r} " if arm is not None else ""
        super().__init__(f"trajectory {where}{field}={value!r} is invalid; valid: {valid}")


@dataclass(frozen=True)
class ArmSamples:
    """One arm's samples: q [rad], qd [rad/s], qdd [rad/s^2], each (N, n joints), read-only."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray


@dataclass(frozen=True)
class MultiArmTrajectory:
    """Arms on one time base ``t`` [s] (N,), shifted so that ``t[0] == 0``."""

    t: np.ndarray
    arms: dict[Arm, ArmSamples]

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[Arm | str, tuple], joints: Mapping[Arm, int] | None = None
    ) -> MultiArmTrajectory:
        """Validate ``{arm: (t, q, qd, qdd)}``; raise TrajectoryError / UnknownNameError.

        joints: each arm's joint count, the columns of its q, qd and qdd (None: seven for
        every arm; an arm the mapping lacks: its q's columns, at least one)."""
        if not arrays:
            raise TrajectoryError(None, "arms", {}, f"at least one of {[a.value for a in Arm]}")
        base: np.ndarray | None = None
        arms: dict[Arm, ArmSamples] = {}
        for key, value in arrays.items():
            arm = Arm.parse(key)
            if arm in arms:
                raise TrajectoryError(arm, "arms", key, "each arm once")
            if not isinstance(value, (tuple, list)) or len(value) != 4:
                raise TrajectoryError(
                    arm, "arrays", type(value).__name__, "a tuple (t, q, qd, qdd)"
                )
            t = _array(arm, "t", value[0], 1)
            if t.size < 1:
                raise TrajectoryError(
                    arm, "t", t.size, ">= 1 sample (one sample: a zero-length plan)"
                )
            if not np.all(np.diff(t) > 0):
                k = int(np.argmin(np.diff(t)))
                raise TrajectoryError(
                    arm,
                    "t",
                    f"t[{k + 1}]={t[k + 1]!r} after t[{k}]={t[k]!r}",
                    "strictly increasing times [s]",
                )
            if base is None:
                base = t
            elif t.shape != base.shape or not np.allclose(t, base, rtol=0, atol=1e-9):
                raise TrajectoryError(
                    arm,
                    "t",
                    f"{t.size} samples to {t[-1]!r} s",
                    "the same time base as every other arm (one shared t)",
                )
            mats = [_array(arm, f, v, 2) for f, v in zip(FIELDS[1:], value[1:], strict=True)]
            n = JOINTS_PER_ARM if joints is None else joints.get(arm, max(mats[0].shape[1], 1))
            for f, m in zip(FIELDS[1:], mats, strict=True):
                if m.shape != (t.size, n):
                    raise TrajectoryError(arm, f"{f} shape", m.shape, f"({t.size}, {n})")
            arms[arm] = ArmSamples(*mats)
        t0 = base - base[0]
        t0.setflags(write=False)
        return cls(t0, arms)

    @property
    def duration_s(self) -> float:
        return float(self.t[-1])

    def sample(self, arm: Arm, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q [rad], qd [rad/s], qdd [rad/s^2]) of ``arm`` at plan time ``tau`` [s]."""
        s = self.arms[arm]
        t = self.t
        if tau <= 0.0:
            return s.q[0].copy(), s.qd[0].copy(), s.qdd[0].copy()
        if tau >= t[-1]:
            return s.q[-1].copy(), s.qd[-1].copy(), s.qdd[-1].copy()
        k = int(np.searchsorted(t, tau, "right")) - 1
        h = t[k + 1] - t[k]
        x = (tau - t[k]) / h
        p0, p1 = s.q[k], s.q[k + 1]
        v0, v1 = s.qd[k] * h, s.qd[k + 1] * h
        a0, a1 = s.qdd[k] * h * h, s.qdd[k + 1] * h * h
        dp = p1 - p0
        c = (
            p0,
            v0,
            a0 / 2,
            10 * dp - 6 * v0 - 4 * v1 - (3 * a0 - a1) / 2,
            -15 * dp + 8 * v0 + 7 * v1 + (3 * a0 - 2 * a1) / 2,
            6 * dp - 3 * v0 - 3 * v1 - (a0 - a1) / 2,
        )
        q = c[0] + x * (c[1] + x * (c[2] + x * (c[3] + x * (c[4] + x * c[5]))))
        qd = c[1] + x * (2 * c[2] + x * (3 * c[3] + x * (4 * c[4] + x * 5 * c[5])))
        qdd = 2 * c[2] + x * (6 * c[3] + x * (12 * c[4] + x * 20 * c[5]))
        return q, qd / h, qdd / (h * h)

    def sample_many(self, arm: Arm, taus: np.ndarray) -> np.ndarray:
        """q [rad] of ``arm`` at each plan time in ``taus`` [s], (len, joints)."""
        return np.array([self.sample(arm, float(x))[0] for x in np.atleast_1d(taus)])


def _array(arm: Arm, field: str, value, ndim: int) -> np.ndarray:
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise TrajectoryError(arm, field, type(value).__name__, "numbers") from None
    if arr.ndim != ndim:
        raise TrajectoryError(arm, f"{field} shape", arr.shape, f"a {ndim}-D array")
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        idx = tuple(int(i) for i in bad[0])
        raise TrajectoryError(arm, f"{field}{list(idx)}", float(arr[idx]), "finite numbers")
    arr.setflags(write=False)
    return arr
