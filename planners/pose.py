"""Poses of the TCP: validation of user targets and the two error measures used everywhere.

A pose is a ``pinocchio.SE3`` (rotation [-], translation [m]) in ROB's base frame. Users
may also pass a 4x4 homogeneous matrix; it is checked to hold a proper rotation.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from rob_twin.planners.errors import KinematicsInputError

ROTATION_TOLERANCE = 1e-9  # max |R^T R - I| entry accepted as a rotation [-]


def as_pose(target: pin.SE3 | np.ndarray, field: str = "target") -> pin.SE3:
    """``target`` as an SE3; raise KinematicsInputError unless it is a finite rigid pose."""
    if isinstance(target, pin.SE3):
        rotation, translation = target.rotation, target.translation
    else:
        mat = np.asarray(target, dtype=float)
        if mat.shape != (4, 4):
            raise KinematicsInputError(field, mat.shape, "a pinocchio.SE3 or a (4, 4) matrix")
        if not np.allclose(mat[3], [0.0, 0.0, 0.0, 1.0], rtol=0.0, atol=0.0):
            raise KinematicsInputError(f"{field} last row", mat[3].tolist(), "[0, 0, 0, 1]")
        rotation, translation = mat[:3, :3], mat[:3, 3]
    if not (np.all(np.isfinite(rotation)) and np.all(np.isfinite(translation))):
        raise KinematicsInputError(field, "non-finite entries", "finite rotation and translation")
    ortho = float(np.max(np.abs(rotation.T @ rotation - np.eye(3))))
    if ortho > ROTATION_TOLERANCE or np.linalg.det(rotation) <= 0.0:
        raise KinematicsInputError(
            f"{field} rotation",
            f"max |R^T R - I| = {ortho:.3g}, det = {np.linalg.det(rotation):.3g}",
            f"orthonormal within {ROTATION_TOLERANCE} and det > 0",
        )
    return pin.SE3(np.array(rotation), np.array(translation))


def pose_error(actual: pin.SE3, desired: pin.SE3) -> tuple[float, float]:
    """(position error [m], orientation error [rad]) between two poses.

    Position: Euclidean distance of the origins. Orientation: the angle of the relative
    rotation ``R_desired^T R_actual`` (0..pi).
    """
    dp = float(np.linalg.norm(actual.translation - desired.translation))
    dr = float(np.linalg.norm(pin.log3(desired.rotation.T @ actual.rotation)))
    return dp, dr
