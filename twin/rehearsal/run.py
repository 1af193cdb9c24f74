"""Run the rehearsal gates and gather the report dict (``hardware_io: false``)."""

from __future__ import annotations

import dataclasses
import sys

from rob_twin.twin.calibration.calibration_file import calibration_label
from rob_twin.twin.rehearsal.gates import RehearsalConfig, default_config, gates_for
from rob_twin.twin.scenario.report import EVIDENCE


def rehearse(
    cfg: RehearsalConfig | None = None, gates: list[str] | None = None, progress: bool = False
) -> dict:
    """Run the gates (all by default); return the report dict (``hardware_io: false``)."""
    from rob_twin.models.names import UnknownNameError

    cfg = cfg or default_config()
    table = gates_for(cfg)
    names = gates or list(table)
    for n in names:
        if n not in table:
            raise UnknownNameError("gate", n, list(table))
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
        "gates": results,
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
