"""Calibration and pose uncertainty turned into clearance allowances (seed 003's bounds).

A rotating joint whose modelled pivot, axis direction and zero may be off moves a point
at distance <= R from its pivot to a place that differs from the modelled one by at most

    point + pivot + zero offset + axis term
    = eps_p + 2 sin(theta/2) eps_c + 2 sin(delta/2) R + 2 R sqrt(1 - d^2),
      d = cos^2(theta/2) + sin^2(theta/2) cos(alpha),

theta the joint's rotation from the calibrated zero [rad] (capped at pi), delta the zero
offset [rad], alpha the axis direction error [rad] (seed 003: the relative rotation of two
rotations through theta about axes alpha apart has half-angle cosine |d|). Along a chain
the errors add (telescoping the product of joint transforms; each term is a rigid map of
one joint's error), and joints shared by both geoms of a pair cancel (the shared-frame
cancellation: moving both geoms by one rigid map changes no distance between them). An
uncertain obstacle position adds ``obstacle_m`` to arm-world pairs.

Units: metres, radians.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from rob_twin.planners.errors import PlannerConfigError


@dataclass(frozen=True)
class UncertaintySpec:
    """Declared calibration / pose uncertainty, each a bound on a magnitude.

    joint_zero_offset_rad: |zero offset| of every arm joint; pivot_m: |pivot location
    error| of every joint; axis_rad: angle between the true and modelled axis direction;
    point_m: |error| of any modelled geom point in its own body; obstacle_m: |position
    error| of world obstacles (arm-world pairs only); query_tolerance_m: error of one
    distance query either side. All zero but the query tolerance: the model taken as exact.
    """

    joint_zero_offset_rad: float = 0.0
    pivot_m: float = 0.0
    axis_rad: float = 0.0
    point_m: float = 0.0
    obstacle_m: float = 0.0
    query_tolerance_m: float = 1e-5

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            top = math.pi if name.endswith("_rad") else 1.0
            if not (
                isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= top
            ):
                unit = "rad" if name.endswith("_rad") else "m"
                raise PlannerConfigError(name, value, f"finite, in [0, {top:.4g}] {unit}")

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> UncertaintySpec:
        unknown = set(raw) - set(cls.__dataclass_fields__)
        if unknown:
            raise PlannerConfigError(
                "uncertainty field",
                sorted(unknown)[0],
                f"one of {sorted(cls.__dataclass_fields__)}",
            )
        return cls(**raw)


def pivot_term_m(theta_rad: float, pivot_m: float) -> float:
    """||(I - Q) e|| <= 2 sin(theta/2) eps_c for a rotation Q through theta."""
    return 2.0 * math.sin(min(abs(theta_rad), math.pi) / 2.0) * pivot_m


def axis_term_m(theta_rad: float, axis_rad: float, radius_m: float) -> float:
    """Largest endpoint discrepancy [m] of two rotations through theta about axes
    ``axis_rad`` apart, for points within ``radius_m`` of the pivot (capped at 2R)."""
    th = min(abs(theta_rad), math.pi)
    a = min(axis_rad, math.pi)
    d = math.cos(th / 2) ** 2 + math.sin(th / 2) ** 2 * math.cos(a)
    return min(2.0 * radius_m * math.sqrt(max(0.0, 1.0 - d * d)), 2.0 * radius_m)


def zero_offset_term_m(offset_rad: float, radius_m: float) -> float:
    """A joint off by ``offset_rad`` moves points within R of its axis by <= 2 R sin(delta/2)."""
    return 2.0 * radius_m * math.sin(min(offset_rad, math.pi) / 2.0)


def rotation_allowance_m(radius_m: float, theta_rad: float, spec: UncertaintySpec) -> float:
    """One joint's contribution: pivot + zero offset + axis terms (no point term)."""
    th = min(abs(theta_rad) + spec.joint_zero_offset_rad, math.pi)
    return (
        pivot_term_m(th, spec.pivot_m)
        + zero_offset_term_m(spec.joint_zero_offset_rad, radius_m)
        + axis_term_m(th, spec.axis_rad, radius_m)
    )


def pair_allowances_m(
    radii_m: np.ndarray,
    theta_max_rad: np.ndarray,
    world_pair: np.ndarray,
    moving_geoms: np.ndarray,
    spec: UncertaintySpec,
) -> np.ndarray:
    """Per pair, the clearance allowance E [m] (seed 003's bounds summed along the chains).

    radii_m: (P, n) per pair and joint, the reach R_j of the joint over the pair's geom it
    moves (0 for joints that move neither or both); theta_max_rad: (n,) the largest
    |rotation| of each joint over the plan; world_pair: (P,) arm-world pairs;
    moving_geoms: (P,) how many of the pair's geoms move (point error once per geom)."""
    radii = np.asarray(radii_m, float)
    out = np.asarray(moving_geoms, float) * spec.point_m
    if spec.pivot_m or spec.axis_rad or spec.joint_zero_offset_rad:
        th = np.minimum(
            np.abs(np.asarray(theta_max_rad, float)) + spec.joint_zero_offset_rad, math.pi
        )
        d = np.cos(th / 2) ** 2 + np.sin(th / 2) ** 2 * math.cos(min(spec.axis_rad, math.pi))
        axis_unit = np.minimum(2.0 * np.sqrt(np.maximum(0.0, 1.0 - d * d)), 2.0)  # per metre of R
        pivot = 2.0 * np.sin(th / 2) * spec.pivot_m
        zero_unit = 2.0 * math.sin(min(spec.joint_zero_offset_rad, math.pi) / 2.0)
        moved = radii > 0
        out = out + (moved * pivot[None, :]).sum(axis=1) + radii @ (axis_unit + zero_unit)
    out = out + np.where(np.asarray(world_pair, bool), spec.obstacle_m, 0.0)
    return out + spec.query_tolerance_m
