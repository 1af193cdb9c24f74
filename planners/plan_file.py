"""A plan and its clearance certificate as one JSON document (``save_plan`` / ``load_plan_file``).

Everything the certificate rests on travels with it, so that anyone can re-verify it from
the model alone (``rob_twin.planners.certificate_check``): the moving arms and joint names, the
shared time base ``t`` [s], positions ``q`` [rad] and velocities ``qd`` [rad/s] per arm,
the full reference qpos of every other joint, the acceleration and velocity limits the
speed bound between samples uses, margin and horizon [m], the certificate itself
(``PlanClearanceCertificate.as_dict``: per pair the certified minimum, where, the active
queries, the uncertainty spec, the bisection queries, the model's hash).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from rob_twin.planners.errors import PlannerError

FORMAT = "rob-twin plan with clearance certificate, v1"


class PlanFileError(PlannerError, ValueError):
    """A plan file that cannot be read or lacks a field; names the file and the field."""

    def __init__(self, where: str, what: str):
        self.where, self.what = where, what
        super().__init__(f"plan file {where}: {what}")


def plan_document(group, plan) -> dict:
    """The JSON-ready document of ``plan`` (a certified ``Plan`` of ``group``)."""
    if plan.certificate is None:
        raise PlanFileError(
            "(in memory)", "plan has no certificate; valid: a plan from ArmGroup.plan"
        )
    moving = list(plan.moving)
    return {
        "format": FORMAT,
        "hardware_io": False,
        "moving": moving,
        "joint_names": {a: list(plan.arms[a].joint_names) for a in moving},
        "t_s": plan.t.tolist(),
        "q_rad": {a: plan.arms[a].q.tolist() for a in moving},
        "qd_rad_s": {a: plan.arms[a].qd.tolist() for a in moving},
        "reference_qpos": group.reference_qpos.tolist(),
        "acceleration_rad_s2": {a: list(group.motion_limits(a).acceleration) for a in moving},
        "velocity_rad_s": {a: list(group.motion_limits(a).velocity) for a in moving},
        "arms": {a: list(group.joint_names(a)) for a in group.arm_names},
        "margin_m": group.config.collision.margin_m,
        "certificate": plan.certificate.as_dict(),
    }


def save_plan(path: str | Path, group, plan) -> Path:
    """Write ``plan`` with its certificate to ``path`` (parents created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plan_document(group, plan), indent=1) + "\n")
    return path


REQUIRED = (
    "format",
    "moving",
    "joint_names",
    "t_s",
    "q_rad",
    "qd_rad_s",
    "reference_qpos",
    "acceleration_rad_s2",
    "velocity_rad_s",
    "arms",
    "margin_m",
    "certificate",
)


def load_plan_file(path: str | Path) -> dict:
    """The document of a plan file, checked for its fields and shapes."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as err:
        raise PlanFileError(str(path), f"cannot be read ({err})") from None
    except json.JSONDecodeError as err:
        raise PlanFileError(str(path), f"is not JSON ({err})") from None
    if not isinstance(doc, dict):
        raise PlanFileError(str(path), "top level is not an object")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise PlanFileError(
            str(path), f"missing field {missing[0]!r}; valid: {', '.join(REQUIRED)}"
        )
    if doc["format"] != FORMAT:
        raise PlanFileError(str(path), f"format {doc['format']!r}; valid: {FORMAT!r}")
    t = np.asarray(doc["t_s"], float)
    for a in doc["moving"]:
        for key in ("q_rad", "qd_rad_s"):
            arr = np.asarray(doc[key].get(a, []), float)
            if arr.shape != (t.size, len(doc["joint_names"].get(a, []))):
                raise PlanFileError(
                    str(path),
                    f"{key}[{a!r}] has shape {arr.shape}; valid: "
                    f"({t.size}, {len(doc['joint_names'].get(a, []))})",
                )
    return doc
