"""The gravity model the Damiao transport calls: holding torques of one arm from the twin's
own MuJoCo model (the robot file's MJCF: OpenArm v2's published inertias, or your robot's).

``controllers/`` must not import mujoco, so its transport takes any callable
``q [rad] (7,) -> tau [Nm] (7,)``; this is the one the twin hands it. Torques are MuJoCo's
recursive Newton-Euler bias at zero velocity (``mj_rne``, gravity only) with every joint but
the arm's at the model's ``home`` keyframe, plus a declared payload (a point mass at the TCP:
``J_tcp^T m g``). One instance per thread: it owns its ``MjData``.
"""

from __future__ import annotations

import mujoco
import numpy as np
from rob_twin.models.loading import HOME_KEY, arm_qpos_indices, keyframe_index
from rob_twin.models.names import Arm, tcp_site
from rob_twin.planners.kinematics import Payload


class ModelGravity:
    """``gravity(q)`` -> holding torques [Nm] of ``arm`` at joint angles ``q`` [rad]."""

    def __init__(self, model: mujoco.MjModel, arm: Arm | str, payload: Payload | None = None):
        self.model = model
        self.arm = Arm.parse(arm)
        self.payload = payload
        self.data = mujoco.MjData(model)
        self.data.qpos[:] = model.key_qpos[keyframe_index(model, HOME_KEY)]
        self.qpos = arm_qpos_indices(model, self.arm)
        joints = [int(np.flatnonzero(model.jnt_qposadr == a)[0]) for a in self.qpos]
        self.dofs = np.array([model.jnt_dofadr[j] for j in joints])
        self.site = model.site(tcp_site(self.arm)).id
        self._bias = np.zeros(model.nv)
        self._jac = np.zeros((3, model.nv))
        self.calls = 0

    def __call__(self, q: np.ndarray) -> np.ndarray:
        self.calls += 1
        m, d = self.model, self.data
        d.qpos[self.qpos] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_rne(m, d, 0, self._bias)
        tau = self._bias[self.dofs].copy()
        p = self.payload
        if p is not None and p.mass_kg > 0.0:
            point = d.site_xpos[self.site] + d.site_xmat[self.site].reshape(3, 3) @ p.com_m
            mujoco.mj_jac(m, d, self._jac, None, point, m.site_bodyid[self.site])
            tau += self._jac[:, self.dofs].T @ (-p.mass_kg * m.opt.gravity)
        return tau
