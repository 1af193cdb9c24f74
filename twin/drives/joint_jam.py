"""A jammed joint (the ``stall`` drive fault): the joint locked where it stood.

A jam is modelled as the joint's two limits closed onto its position when the jam starts:
MuJoCo's limit constraint has a position term, so the joint holds against any servo, however
stiff (a dry-friction jam, ``dof_frictionloss``, is velocity-level only: a stiff servo pushes
a joint through it at a steady creep, and the tracking-error check it should trip never
sees an error). The limit's solver reference is made as stiff as the timestep allows
(``solref`` time constant 2 x timestep, critically damped), so a peak servo torque moves the
jammed joint by well under a milliradian. Releasing restores the model's own range, limit
flag and solref. Hinge and slide joints only (one dof per joint).
"""

from __future__ import annotations

import mujoco
import numpy as np

__all__ = ["JointJams"]


class JointJams:
    """Jams on the joints of ``model``; ``set(dof, jammed)`` locks or frees one dof's joint
    at ``data``'s current position; ``release_all()`` restores every jammed joint."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData):
        self.model, self.data = model, data
        # joint id -> its own (range, limited flag, solref), while jammed
        self._saved: dict[int, tuple[np.ndarray, int, np.ndarray]] = {}

    def set(self, dof: int, jammed: bool) -> None:
        """Lock (``jammed``) or free the joint of ``dof`` (a MuJoCo dof index)."""
        m = self.model
        j = int(m.dof_jntid[dof])
        if jammed and j not in self._saved:
            self._saved[j] = (m.jnt_range[j].copy(), int(m.jnt_limited[j]), m.jnt_solref[j].copy())
            q = float(self.data.qpos[m.jnt_qposadr[j]])
            m.jnt_range[j] = (q, q)
            m.jnt_limited[j] = 1
            m.jnt_solref[j] = (2.0 * m.opt.timestep, 1.0)
        elif not jammed and j in self._saved:
            self._restore(j)

    def _restore(self, j: int) -> None:
        rng, limited, solref = self._saved.pop(j)
        self.model.jnt_range[j] = rng
        self.model.jnt_limited[j] = limited
        self.model.jnt_solref[j] = solref

    def release_all(self) -> None:
        for j in list(self._saved):
            self._restore(j)
