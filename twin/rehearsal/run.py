"""Run the rehearsal gates and gather the report dict (``hardware_io: false``)."""

from __future__ import annotations

import dataclasses
import sys

from rob_twin.models.robot import robot_of
from rob_twin.twin.calibration.calibration_file import calibration_label
from rob_twin.twin.rehearsal.gates import (
    RehearsalConfig,
    default_config,
    gates_for,
    gates_not_run,
)
from rob_twin.twin.scenario.report import EVIDENCE


def check_gates(cfg: RehearsalConfig, names: list[str] | None) -> None:
    """UnknownNameError (exit 2) for a gate name the robot's profile lacks; a gate the robot
    lacks a capability for says which capability."""
    from rob_twin.models.names import UnknownNameError

    table, not_run = gates_for(cfg), gates_not_run(cfg)
    for n in names or ():
        if n in not_run:
            raise UnknownNameError(f"gate ({n!r} cannot run: {not_run[n]})", n, list(table))
        if n not in table:
            raise UnknownNameError("gate", n, list(table))


def rehearse(
    cfg: RehearsalConfig | None = None, gates: list[str] | None = None, progress: bool = False
) -> dict:
    """Run the gates (all by default); return the report dict (``hardware_io: false``)."""

    cfg = cfg or default_config()
    table = gates_for(cfg)
    not_run = gates_not_run(cfg)
    names = gates or list(table)
    check_gates(cfg, names)
    results = []
    for i, n in enumerate(names, 1):
        if progress:
            print(f"[rehearse] {i}/{len(names)} {n} ...", file=sys.stderr, flush=True)
        res = table[n](cfg)
        if progress:
            print(
                f"[rehearse] {n}: {'PASS' if res.passed else 'FAIL'}", file=sys.stderr, flush=True
            )
        results.append(res.as_dict())
    return {
        **EVIDENCE,
        "report": "pre-commissioning rehearsal (simulated)",
        "passed": all(r["passed"] for r in results),
        "calibration": calibration_label(cfg.base.calibration),
        "robot_model": robot_of(cfg.base.robot).identity(),
        "gates": results,
        **({"gates_not_run": not_run} if not_run and gates is None else {}),
        "base_config": {
            "seed": cfg.base.seed,
            "owner_rate_hz": cfg.base.owner_rate_hz,
            "feedback_rate_hz": cfg.base.feedback_rate_hz,
            "swap_wiring": cfg.base.swap_wiring,
            "robot": cfg.base.robot,
            "faults": [
                dataclasses.asdict(f) | {"kind": f.kind.value, "arm": f.arm.value}
                for f in cfg.base.faults
            ],
        },
    }
