"""A held object in physics: a box one hand or both hands grasp, and the wrench each grasp puts
on it.

The box is added to the robot's scene at load time with ``mujoco.MjSpec`` (``held_scene``; the
generated ``models/rob/*.xml`` are not edited): a body ``held/box`` with a free joint, one box
geom (uniform density: its mass and inertia), and three weld equality constraints on the box,
each anchored at its centre: ``held/stand`` (to the world: the stand the box waits on, active
at load), ``held/right`` and ``held/left`` (to each hand, inactive).
``HeldObject.grasp(hands)`` writes each named hand's weld pose as the hand-to-box pose of
that instant and switches it on (``data.eq_active``); the stand lets go. ``release(hands)``
switches welds off (with no hand left, the box falls). Contacts between the box and the
hands' last links and fingers are excluded, so the welds alone carry the box.

Why a weld and not a friction grasp by the grippers: the generated parallel grippers' pads
were not shaped for a box, and four soft finger contacts per hand at 1 kHz chatter and creep;
the weld gives a stiff, deterministic closed chain whose constraint rows (``efc_force``) are
each hand's force on the box, directly, with no contact bookkeeping. What it cannot show: a
weld never slips, rolls or opens by itself, has no finger compliance and no contact geometry.
The grippers only show a scenario's grasp (``held_fingers``): they close to a small gap short
of the box, never on it, and put no force on it.
Slip is therefore *modelled and reported*, not simulated: a hand's grasp slips when the
tangential part of its force on the box (perpendicular to the finger closing axis; for a hand
without a gripper, to the hand-to-hand axis) exceeds
``2 * friction * grip_force_n`` (two pads, Coulomb); torque about the pads is not counted.

Units: metres, kilograms, newtons, newton-metres.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import mujoco
import numpy as np
from rob_twin.models import names as N
from rob_twin.models.loading import apply_home
from rob_twin.models.names import Arm
from rob_twin.models.robot_model import compile_quietly, robot_spec
from rob_twin.planners.kinematics import Payload
from rob_twin.twin.errors import TwinInputError

BOX = "held/box"
STAND = "held/stand"
GRAVITY = 9.81  # [m/s^2], the scene's default


def weld_name(arm: Arm | str) -> str:
    """The weld equality of ``arm``'s hand on the box."""
    return f"held/{Arm.parse(arm).value}"


DEFAULT_SIZE_M = (0.12, 0.34, 0.10)
HAND_GAP_M = 0.03  # from each hand's TCP to the box's side, for the derived width [m]
WIDTH_DIGITS = 3  # the derived width to the millimetre (ROB: 0.39994 - 0.06 -> 0.34 m)


@dataclass(frozen=True)
class HeldBoxConfig:
    """size_m: the box's full edge lengths (x, y, z) [m] (the default width y is the distance
    between the hands' grasp points at home (``grasp_point``) less ``HAND_GAP_M`` on each
    side, to the millimetre: ROB's 0.34 m is between TCPs 0.40 m apart); mass_kg: its mass
    (uniform density); position_m: its centre at load (None: midway between the two grasp
    points at the home keyframe: ROB's TCPs, which lie between its fingers);
    grip_force_n: each gripper's squeeze [N] (ROB's finger servo peak is 20 N); friction: pad
    friction coefficient (the fingers' geom friction, 1.2); ASSUMED values, not measured."""

    size_m: tuple[float, float, float] = DEFAULT_SIZE_M
    mass_kg: float = 1.0
    position_m: tuple[float, float, float] | None = None
    grip_force_n: float = 20.0
    friction: float = 1.2

    def __post_init__(self) -> None:
        size = np.asarray(self.size_m, float)
        if size.shape != (3,) or not np.all(np.isfinite(size)) or not np.all(size > 0):
            raise TwinInputError("held box size_m", self.size_m, "3 finite lengths > 0 m")
        if not (math.isfinite(self.mass_kg) and 0.0 < self.mass_kg <= 50.0):
            raise TwinInputError("held box mass_kg", self.mass_kg, "in (0, 50] kg")
        if self.position_m is not None and (
            len(self.position_m) != 3 or not np.all(np.isfinite(self.position_m))
        ):
            raise TwinInputError("held box position_m", self.position_m, "3 finite values [m]")
        if not (math.isfinite(self.grip_force_n) and 0.0 <= self.grip_force_n <= 1000.0):
            raise TwinInputError("held box grip_force_n", self.grip_force_n, "in [0, 1000] N")
        if not (math.isfinite(self.friction) and 0.0 <= self.friction <= 5.0):
            raise TwinInputError("held box friction", self.friction, "in [0, 5]")

    @property
    def grip_capacity_n(self) -> float:
        """The largest tangential force one grasp holds without slipping [N] (two pads)."""
        return 2.0 * self.friction * self.grip_force_n


def default_config() -> HeldBoxConfig:
    return HeldBoxConfig()


def last_link(model: mujoco.MjModel, arm: Arm) -> str:
    """The body of ``arm``'s last joint (``right/link7`` on a seven-joint arm)."""
    n = 0
    while n < N.JOINTS_PER_ARM and (
        mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, N.arm_joint(arm, n + 1)) >= 0
    ):
        n += 1
    return N.arm_link_body(arm, n)


def hand_body(model: mujoco.MjModel, arm: Arm) -> str:
    """The body a hand grasps with: ROB's ``hand``, else the body of the arm's last joint."""
    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, N.hand_body(arm)) >= 0:
        return N.hand_body(arm)
    return last_link(model, arm)


def hand_subtree(model: mujoco.MjModel, arm: Arm) -> list[str]:
    """The last link of ``arm`` and every body below it (hand, fingers) by name."""
    root = model.body(last_link(model, arm)).id
    out = []
    for b in range(model.nbody):
        k = b
        while k > 0 and k != root:
            k = int(model.body_parentid[k])
        if k == root:
            out.append(model.body(b).name)
    return out


def home_hands_midpoint(model: mujoco.MjModel) -> np.ndarray:
    """Midway between the two TCPs at the home keyframe [m] (world frame)."""
    data = mujoco.MjData(model)
    apply_home(model, data)
    return 0.5 * sum(data.site(N.tcp_site(a)).xpos for a in Arm)


def finger_geoms(model: mujoco.MjModel, arm: Arm) -> list[int]:
    """The collision geoms of ``arm``'s fingers: those of the bodies below its last link."""
    below = set(hand_subtree(model, arm)) - {last_link(model, arm)}
    return [
        g
        for g in range(model.ngeom)
        if model.body(int(model.geom_bodyid[g])).name in below and model.geom_contype[g]
    ]


def tcp_between_fingers(
    model: mujoco.MjModel, data: mujoco.MjData, arm: Arm, geoms: list[int]
) -> bool:
    """True when ``arm``'s TCP lies inside the box that bounds its fingers' collision geoms
    (each geom's own bounding box, ``geom_aabb``), in its last link's frame: the TCP is then
    where the fingers close (ROB's, 3.7 cm from the fingers' centre, between the pads), not a
    wrist point behind them (OpenArm v2's, 13.5 cm behind)."""
    link = model.body(last_link(model, arm)).id
    rot, origin = data.xmat[link].reshape(3, 3), data.xpos[link]
    corners = []
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    for g in geoms:
        centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        local = centre + signs * half  # the geom's bounding-box corners, geom frame
        world = data.geom_xpos[g] + local @ data.geom_xmat[g].reshape(3, 3).T
        corners.append((world - origin) @ rot)
    pts = np.vstack(corners)
    tcp = (data.site(N.tcp_site(arm)).xpos - origin) @ rot
    return bool(np.all(tcp >= pts.min(axis=0)) and np.all(tcp <= pts.max(axis=0)))


def grasp_point(model: mujoco.MjModel, data: mujoco.MjData, arm: Arm) -> np.ndarray:
    """Where ``arm``'s hand holds [m] (world frame): its TCP when the hand has no fingers or the
    TCP lies between them (``tcp_between_fingers``: ROB), else the centre of its fingers'
    collision geoms (the bodies below its last link). OpenArm v2's TCP is its wrist control
    point, 0.135 m behind the fingertips: a box there would sit in the wrists."""
    geoms = finger_geoms(model, arm)
    if not geoms or tcp_between_fingers(model, data, arm, geoms):
        return data.site(N.tcp_site(arm)).xpos.copy()
    return data.geom_xpos[geoms].mean(axis=0)


def add_held_box(
    spec: mujoco.MjSpec, config: HeldBoxConfig, position: np.ndarray, model: mujoco.MjModel
) -> None:
    """Add the box body, its stand weld (active), the hands' welds (inactive) and the
    box-hand contact exclusions to ``spec`` (in place); ``model``: ``spec`` compiled before."""
    body = spec.worldbody.add_body(name=BOX, pos=[float(v) for v in position])
    body.add_freejoint(name=BOX)
    half = [0.5 * float(v) for v in config.size_m]
    body.add_geom(
        name=BOX,
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=half,
        mass=float(config.mass_kg),
        rgba=[0.85, 0.55, 0.25, 1.0],
        friction=[config.friction, 0.02, 0.001],
    )
    weld = mujoco.mjtEq.mjEQ_WELD
    body_obj = mujoco.mjtObj.mjOBJ_BODY
    stand = spec.add_equality(name=STAND, type=weld, objtype=body_obj, name1="world", name2=BOX)
    # anchor at the box's centre, the box's pose in the world, torquescale 1: written, not
    # left to the compiler (its default weld data is not this rest pose)
    stand.data[:11] = [0, 0, 0, *(float(v) for v in position), 1, 0, 0, 0, 1]
    for arm in Arm:
        spec.add_equality(
            name=weld_name(arm),
            type=weld,
            objtype=body_obj,
            name1=hand_body(model, arm),
            name2=BOX,
            active=False,
        )
        for part in hand_subtree(model, arm):
            spec.add_exclude(bodyname1=BOX, bodyname2=part)


def held_scene(robot: str = N.DEFAULT_ROBOT, config: HeldBoxConfig | None = None) -> mujoco.MjModel:
    """``robot``'s scene with the held box (``add_held_box``), compiled."""
    cfg = config or default_config()
    spec = robot_spec(robot)
    model = compile_quietly(spec)
    # midway between the grasp points at home: ROB's TCPs (between its fingers), where its
    # baselines have the box; the fingers' centres on a robot whose TCP is a wrist point
    data = mujoco.MjData(model)
    apply_home(model, data)
    grips = {arm: grasp_point(model, data, arm) for arm in Arm}
    position = 0.5 * (grips[Arm.RIGHT] + grips[Arm.LEFT])
    if cfg.size_m == DEFAULT_SIZE_M:
        span = float(np.linalg.norm(grips[Arm.RIGHT] - grips[Arm.LEFT]))
        width = round(span - 2 * HAND_GAP_M, WIDTH_DIGITS)
        if not width > 0.0:
            raise TwinInputError(
                "held box width",
                f"{width} m ({robot}: grasp points {span:.4f} m apart at home)",
                f"grasp points more than {2 * HAND_GAP_M} m apart, or an explicit size_m",
            )
        cfg = replace(cfg, size_m=(DEFAULT_SIZE_M[0], width, DEFAULT_SIZE_M[2]))
        if cfg.position_m is None:
            cfg = fitted_box(spec, cfg, position, model, robot)
    if cfg.position_m is not None:
        position = np.asarray(cfg.position_m, float)
    add_held_box(spec, cfg, position, model)
    return compile_quietly(spec)


FIT_CLEARANCE_M = 0.006  # the derived box clears every link but the hands by this [m]: the
# planner's 5 mm margin and 1 mm to spare (the carry starts from the load pose)
FIT_SHRINK = 0.8  # each fitting step scales the box's depth (x) and height (z) by this
FIT_MIN_EDGE_M = 0.03  # no thinner than this [m]


def box_clearance(
    spec: mujoco.MjSpec, config: HeldBoxConfig, position: np.ndarray, model: mujoco.MjModel
) -> tuple[float, str]:
    """The smallest distance [m] at home from the box (``config`` at ``position``) to any
    collision geom of the robot outside the two hands (``hand_subtree``), and that geom's
    name (clearances beyond ``FIT_CLEARANCE_M`` are reported as that bound)."""
    trial = spec.copy()
    add_held_box(trial, config, position, model)
    m = compile_quietly(trial)
    d = mujoco.MjData(m)
    apply_home(m, d)
    hands = {name for arm in Arm for name in hand_subtree(m, arm)} | {BOX}
    box = m.geom(BOX).id
    nearest, name = FIT_CLEARANCE_M, ""
    fromto = np.zeros(6)
    for g in range(m.ngeom):
        if not (m.geom_contype[g] or m.geom_conaffinity[g]):
            continue
        if m.body(int(m.geom_bodyid[g])).name in hands or m.geom_bodyid[g] == 0:
            continue
        dist = mujoco.mj_geomDistance(m, d, box, g, FIT_CLEARANCE_M, fromto)
        if dist < nearest:
            nearest, name = float(dist), m.geom(g).name
    return nearest, name


def fitted_box(
    spec: mujoco.MjSpec,
    config: HeldBoxConfig,
    position: np.ndarray,
    model: mujoco.MjModel,
    robot: object,
) -> HeldBoxConfig:
    """The derived box (default size, width from the grasp points) made to fit ``robot``: its
    depth and height shrunk by ``FIT_SHRINK`` until it clears every link but the hands by
    ``FIT_CLEARANCE_M`` at home (unchanged where it already does: ROB, OpenArm v2).
    TwinInputError when even ``FIT_MIN_EDGE_M`` edges do not clear."""
    cfg = config
    while True:
        clearance, geom = box_clearance(spec, cfg, position, model)
        if clearance >= FIT_CLEARANCE_M:
            return cfg
        x, y, z = cfg.size_m
        if min(x, z) * FIT_SHRINK < FIT_MIN_EDGE_M:
            raise TwinInputError(
                "held box",
                f"{robot}: a {FIT_MIN_EDGE_M} m box between the hands at home is "
                f"{clearance * 1000:.1f} mm from {geom}",
                f">= {FIT_CLEARANCE_M * 1000:.0f} mm from every link but the hands, "
                "or an explicit HeldBoxConfig (size_m, position_m)",
            )
        cfg = replace(cfg, size_m=(round(x * FIT_SHRINK, 4), y, round(z * FIT_SHRINK, 4)))


@dataclass(frozen=True)
class GraspWrench:
    """The forces on the box at one instant [N] (world frame) and what they mean.

    force: {arm: force of that hand's weld on the box}; internal_n: 0.5 * (f_right -
    f_left), the part of the two grasp forces that cancels (zero with one hand);
    squeeze_n: its component along the right-to-left hand axis (positive: the hands press
    the box together, negative: they pull it apart); tangential_n: {arm: force
    perpendicular to that gripper's closing axis}; slipping: {arm: tangential_n >
    grip capacity}."""

    force: dict[Arm, np.ndarray]
    internal_n: np.ndarray
    squeeze_n: float
    tangential_n: dict[Arm, float]
    slipping: dict[Arm, bool] = field(default_factory=dict)


class HeldObject:
    """Grasp and release the held box of a twin built on ``held_scene``; read its wrenches.

    model, data: the twin's (``Twin.model``, ``Twin.data``); config: the box's
    ``HeldBoxConfig`` (grip force and friction for the slip model, mass for payloads);
    gravity: optional {arm: gravity model with a ``payload`` attribute} (the Damiao loop's
    ``PinocchioGravity``): each grasp updates the holding arms' payload to their share of the
    box's mass at its centre (in the TCP frame). Call from the thread that owns ``data``."""

    def __init__(
        self,
        model: mujoco.MjModel,
        data: mujoco.MjData,
        config: HeldBoxConfig | None = None,
        gravity: dict | None = None,
    ):
        self.model, self.data = model, data
        self.config = config or default_config()
        self.gravity = dict(gravity or {})
        try:
            self.box = model.body(BOX).id
            self.stand = model.equality(STAND).id
            self.welds = {arm: model.equality(weld_name(arm)).id for arm in Arm}
        except KeyError:
            raise TwinInputError(
                "model", "a model without a held box", "a model made by held_scene()"
            ) from None
        self.hands = {arm: model.body(hand_body(model, arm)).id for arm in Arm}
        self.tcps = {arm: model.site(N.tcp_site(arm)).id for arm in Arm}
        # each gripper's closing axis is its finger joint's; a hand without a gripper (a
        # generated robot) closes along the hand-to-hand axis (None here, see ``wrench``)
        self.finger_joint = {
            arm: (
                model.joint(N.gripper_joint(arm)).id
                if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, N.gripper_joint(arm)) >= 0
                else None
            )
            for arm in Arm
        }
        jnt = model.body_jntadr[self.box]
        self.box_dof = int(model.jnt_dofadr[jnt])
        self.box_qpos = int(model.jnt_qposadr[jnt])
        self.mass_kg = float(model.body_subtreemass[self.box])

    # ------------------------------------------------------------------ state
    @property
    def holding(self) -> tuple[Arm, ...]:
        """The arms whose weld is active, RIGHT first."""
        return tuple(a for a in Arm if self.data.eq_active[self.welds[a]])

    @property
    def on_stand(self) -> bool:
        return bool(self.data.eq_active[self.stand])

    def box_position(self) -> np.ndarray:
        """The box's centre [m] (world frame)."""
        return self.data.xpos[self.box].copy()

    def penetrations(self) -> dict[str, float]:
        """{geom name: deepest penetration [m]} of the box's present contacts (the last step's)
        with anything the box is not excluded from: a box the default placement puts inside
        an arm's links (a robot whose hands are far apart at home) shows here."""
        m, d = self.model, self.data
        out: dict[str, float] = {}
        for i in range(d.ncon):
            c = d.contact[i]
            g1, g2 = int(c.geom1), int(c.geom2)
            bodies = (int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2]))
            if self.box not in bodies or c.dist >= 0.0:
                continue
            other = g2 if bodies[0] == self.box else g1
            name = m.geom(other).name or f"geom {other}"
            out[name] = max(out.get(name, 0.0), float(-c.dist))
        return out

    # ------------------------------------------------------------------ grasp
    def _hands(self, hands: Iterable[Arm | str]) -> tuple[Arm, ...]:
        if isinstance(hands, (str, Arm)):
            hands = (hands,)
        parsed = tuple(dict.fromkeys(Arm.parse(h) for h in hands))
        if not parsed:
            raise TwinInputError("hands", list(hands), "one or both of 'right', 'left'")
        return parsed

    def grasp(self, hands: Iterable[Arm | str] = tuple(Arm)) -> None:
        """Weld each of ``hands`` to the box where they are now (the stand lets go)."""
        hands = self._hands(hands)
        d = self.data
        for arm in hands:
            pos, quat = _relative_pose(d, self.hands[arm], self.box)
            self.model.eq_data[self.welds[arm], :11] = [0, 0, 0, *pos, *quat, 1.0]
            d.eq_active[self.welds[arm]] = 1
        d.eq_active[self.stand] = 0
        mujoco.mj_forward(self.model, d)
        self._share_payload()

    def release(self, hands: Iterable[Arm | str] = tuple(Arm)) -> None:
        """Switch off the welds of ``hands`` (with no hand left, the box falls)."""
        for arm in self._hands(hands):
            self.data.eq_active[self.welds[arm]] = 0
        mujoco.mj_forward(self.model, self.data)
        self._share_payload()

    def payloads(self) -> dict[Arm, Payload | None]:
        """Each arm's share of the box (mass split evenly over the holding hands, at the
        box's centre in that arm's TCP frame); None for an arm that does not hold it."""
        holding = self.holding
        out: dict[Arm, Payload | None] = {arm: None for arm in Arm}
        for arm in holding:
            site = self.tcps[arm]
            rot = self.data.site_xmat[site].reshape(3, 3)
            com = rot.T @ (self.data.xpos[self.box] - self.data.site_xpos[site])
            out[arm] = Payload(self.mass_kg / len(holding), tuple(float(v) for v in com))
        return out

    def _share_payload(self) -> None:
        shares = self.payloads()
        for arm, model in self.gravity.items():
            model.payload = shares[Arm.parse(arm)]

    # ------------------------------------------------------------------ forces
    def weld_forces(self) -> dict[Arm, np.ndarray]:
        """{arm: force [N] of that hand's active weld on the box (world frame)}, from the
        weld rows of the last step's ``efc_force`` (J^T f on the box's translational dofs)."""
        d = self.data
        out = {}
        eq_rows = np.flatnonzero(d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        for arm in self.holding:
            rows = eq_rows[d.efc_id[eq_rows] == self.welds[arm]]
            jac = _rows_of_jacobian(self.model, d, rows)[:, self.box_dof : self.box_dof + 3]
            out[arm] = jac.T @ d.efc_force[rows]
        return out

    def wrench(self) -> GraspWrench:
        """The grasp wrench of this instant (``GraspWrench``)."""
        d = self.data
        force = self.weld_forces()
        tangential, slipping = {}, {}
        cap = self.config.grip_capacity_n
        between = d.site_xpos[self.tcps[Arm.LEFT]] - d.site_xpos[self.tcps[Arm.RIGHT]]
        for arm, f in force.items():
            if self.finger_joint[arm] is not None:
                axis = d.xaxis[self.finger_joint[arm]]
            else:
                axis = between / max(float(np.linalg.norm(between)), 1e-9)
            tangential[arm] = float(np.linalg.norm(f - (f @ axis) * axis))
            slipping[arm] = tangential[arm] > cap
        if len(force) == 2:
            internal = 0.5 * (force[Arm.RIGHT] - force[Arm.LEFT])
            axis = d.site_xpos[self.tcps[Arm.LEFT]] - d.site_xpos[self.tcps[Arm.RIGHT]]
            axis = axis / max(float(np.linalg.norm(axis)), 1e-9)
            squeeze = float(internal @ axis)
        else:
            internal, squeeze = np.zeros(3), 0.0
        return GraspWrench(force, internal, squeeze, tangential, slipping)


def _relative_pose(data: mujoco.MjData, body1: int, body2: int) -> tuple[np.ndarray, np.ndarray]:
    """The pose of ``body2`` in ``body1``'s frame: position [m], quaternion (w, x, y, z)."""
    inv = np.zeros(4)
    mujoco.mju_negQuat(inv, data.xquat[body1])
    pos = np.zeros(3)
    mujoco.mju_rotVecQuat(pos, data.xpos[body2] - data.xpos[body1], inv)
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, inv, data.xquat[body2])
    return pos, quat


def _rows_of_jacobian(model: mujoco.MjModel, data: mujoco.MjData, rows: np.ndarray) -> np.ndarray:
    """Dense rows ``rows`` of the constraint Jacobian (dense or sparse storage)."""
    nv = model.nv
    if not mujoco.mj_isSparse(model):
        return data.efc_J.reshape(-1, nv)[rows]
    out = np.zeros((len(rows), nv))
    for i, r in enumerate(rows):
        adr, nnz = data.efc_J_rowadr[r], data.efc_J_rownnz[r]
        out[i, data.efc_J_colind[adr : adr + nnz]] = data.efc_J[adr : adr + nnz]
    return out


def held_closed_loop(config, box: HeldBoxConfig | None = None) -> tuple:
    """``(loop, held)``: the closed loop of ``config`` (a ``ClosedLoopConfig``; its robot) on
    that robot's scene with the held box, and the box's ``HeldObject`` (wired to the loop's
    gravity models where it has them). The caller closes the loop."""
    from rob_twin.twin.sim.loops import make_closed_loop
    from rob_twin.twin.sim.twin import Twin, TwinConfig

    box = box or default_config()
    twin = Twin(TwinConfig(seed=config.seed), model=held_scene(config.robot, box))
    loop = make_closed_loop(config, twin=twin)
    return loop, HeldObject(twin.model, twin.data, box, getattr(loop, "gravity", None))
