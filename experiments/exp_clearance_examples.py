"""Experiment ``clearance-examples``: seed 003's worked numbers, computed by the planner's code.

- Envelope: queries at 0, 1, 2 s with clearance intervals [5, 7], [6, 8], [5, 7] mm and
  L = 4 mm/s certify 3.5 mm (at t = 0.375 s and 1.625 s); the two outer queries alone
  certify 1 mm (``rob_twin.planners.certificate_envelope.envelope_minima``).
- Rotation: R = 0.50 m, theta = 90 deg, axis error 1 deg, pivot error 1 mm, point error
  0.2 mm give 0.200 + 1.414 + 12.341 = 13.955 mm; 20 mm nominal clearance leaves 6.045 mm
  (``rob_twin.planners.uncertainty``).
- Two-link sensitivity: links 0.5 m, angles (0, pi/2): endpoint (0.5, 0.5) m; a 0.01 rad
  first-joint offset moves it about 7.07 mm.

Pure arithmetic, no simulation: ``hardware_io: false``.
"""

from __future__ import annotations

import math

import numpy as np
from rob_twin.experiments.output import markdown_table, write_experiment
from rob_twin.experiments.registry import experiment
from rob_twin.planners.certificate_envelope import envelope_minima
from rob_twin.planners.uncertainty import (
    UncertaintySpec,
    axis_term_m,
    pivot_term_m,
    zero_offset_term_m,
)


def envelope_example() -> dict:
    """Seed 003's three-query envelope, in mm and s (L = 4 mm/s: s = L t)."""
    L = 4.0
    t = np.array([0.0, 1.0, 2.0])
    lower = np.array([[5.0, 6.0, 5.0]])
    val, sc, _, _ = envelope_minima((L * t)[None, :], lower)
    k = int(np.argmin(val[0]))
    outer, _, _, _ = envelope_minima((L * t[[0, 2]])[None, :], lower[:, [0, 2]])
    return {
        "certified_mm": float(val[0].min()),
        "at_s": [float(x / L) for x in sc[0]],
        "first_minimum_at_s": float(sc[0, k] / L),
        "outer_queries_only_mm": float(outer[0].min()),
        "seed_says": {"certified_mm": 3.5, "at_s": 0.375, "outer_queries_only_mm": 1.0},
    }


def rotation_example() -> dict:
    """Seed 003's tool-motion example: point + pivot + axis allowances [mm]."""
    spec = UncertaintySpec(pivot_m=0.001, axis_rad=math.radians(1.0), point_m=0.0002)
    theta, radius = math.radians(90.0), 0.50
    point = spec.point_m
    pivot = pivot_term_m(theta, spec.pivot_m)
    axis = axis_term_m(theta, spec.axis_rad, radius)
    total = point + pivot + axis
    return {
        "point_mm": point * 1e3,
        "pivot_mm": pivot * 1e3,
        "axis_mm": axis * 1e3,
        "total_mm": total * 1e3,
        "left_of_20_mm": 20.0 - total * 1e3,
        "seed_says": {
            "point_mm": 0.200,
            "pivot_mm": 1.414,
            "axis_mm": 12.341,
            "total_mm": 13.955,
            "left_of_20_mm": 6.045,
        },
    }


def two_link_example() -> dict:
    """Endpoint error [mm] of a 0.01 rad first-joint offset on a (0.5, 0.5) m arm at (0, pi/2)."""
    l1 = l2 = 0.5
    th1, th2, delta = 0.0, math.pi / 2, 0.01

    def endpoint(a: float) -> np.ndarray:
        return np.array(
            [l1 * math.cos(a) + l2 * math.cos(a + th2), l1 * math.sin(a) + l2 * math.sin(a + th2)]
        )

    p = endpoint(th1)
    first_order = float(np.linalg.norm(np.array([-p[1], p[0]]) * delta))
    exact = float(np.linalg.norm(endpoint(th1 + delta) - p))
    bound = zero_offset_term_m(delta, float(np.linalg.norm(p)))
    return {
        "endpoint_m": p.round(6).tolist(),
        "first_order_mm": first_order * 1e3,
        "exact_mm": exact * 1e3,
        "certificate_bound_mm": bound * 1e3,
        "seed_says": {"first_order_mm": 7.07},
    }


@experiment("clearance-examples")
def run(seed: int = 0) -> dict:
    """Seed 003's worked numbers (``seed`` unused: nothing is random)."""
    env, rot, two = envelope_example(), rotation_example(), two_link_example()
    rows = [
        {
            "example": "envelope: certified minimum [mm]",
            "ours": round(env["certified_mm"], 3),
            "seed": 3.5,
        },
        {
            "example": "envelope: where [s]",
            "ours": round(env["first_minimum_at_s"], 4),
            "seed": 0.375,
        },
        {
            "example": "envelope: outer queries only [mm]",
            "ours": round(env["outer_queries_only_mm"], 3),
            "seed": 1.0,
        },
        {"example": "rotation: point [mm]", "ours": round(rot["point_mm"], 3), "seed": 0.200},
        {"example": "rotation: pivot [mm]", "ours": round(rot["pivot_mm"], 3), "seed": 1.414},
        {"example": "rotation: axis [mm]", "ours": round(rot["axis_mm"], 3), "seed": 12.341},
        {"example": "rotation: total [mm]", "ours": round(rot["total_mm"], 3), "seed": 13.955},
        {
            "example": "rotation: left of 20 mm [mm]",
            "ours": round(rot["left_of_20_mm"], 3),
            "seed": 6.045,
        },
        {
            "example": "two-link: 0.01 rad offset [mm]",
            "ours": round(two["first_order_mm"], 3),
            "seed": 7.07,
        },
    ]
    result = {
        "envelope": env,
        "rotation": rot,
        "two_link": two,
        "rows": rows,
        "all_match": all(
            abs(r["ours"] - r["seed"]) <= 0.0015 * max(1.0, abs(r["seed"])) for r in rows
        ),
    }
    return write_experiment("clearance-examples", result, markdown_table(rows))
