"""Named arm poses of ROB [rad], pure data (no mujoco): the model's keyframes are written
from them (``rob_twin.models.build``), so each pose has one definition.

``KEYFRAMES`` names the states experiments and the twin start from: ``home`` (both arms at
``dimensions.HOME_ARM_POSE``) and ``crossing_start`` (the start of the crossing pair).
``CROSSING_GOALS`` is where the crossing pair ends.
"""

from __future__ import annotations

from rob_twin.models.dimensions import HOME_ARM_POSE

ArmPoses = dict[str, tuple[float, ...]]  # {"right": q, "left": q}, 7 joint angles [rad] each

HOME: ArmPoses = {"right": HOME_ARM_POSE, "left": HOME_ARM_POSE}

# The crossing pair: the hands swap sides in front of the chest. Found by
# rob_twin.experiments.crossing_goals.search_crossing_goals(seed=1) with its default budget
# (150,000 joint draws per arm -> pools of 450 right / 444 left states; 4,000 start picks
# ranked by straight-line arm-arm hits; the 40 best fully evaluated, 91 s on one core),
# rounded to 1e-4 rad. Its figures (planner seed 0, simulated): planned separately and run
# in sync, 91 of 182 frames in contact (coal); the group plan bent a TCP 8.2 cm from the
# path the arm takes alone when the pair was chosen (9.6 cm since the shortcut skips cuts of
# 2 % or less; `rob-twin experiment crossing` reports it); the group plan run one arm
# after the other penetrated in 326 of 890 states (`rob-twin experiment sequential` reports
# today's figure). The previous pair
# (seed 0, first hit of a side-swap search) scored 22 of 235 frames, 1.3 cm bend, 0
# sequential hits. The right hand starts right of the left one and each hand ends where
# the other started.
CROSSING_START: ArmPoses = {
    "right": (1.3478, -1.0388, -1.3575, 1.8563, -0.537, 0.5711, 0.1996),
    "left": (1.1135, -1.2749, -1.4083, 1.3621, 0.1736, 0.3888, 0.2503),
}
CROSSING_GOALS: ArmPoses = {
    "right": (0.619, -1.3275, -1.1877, 1.3564, -0.5384, -0.3084, 0.3282),
    "left": (1.1068, -1.3433, -1.439, 1.6231, -0.0475, 0.0758, -0.0042),
}

# Where ``rob-twin excite`` starts and ends its excitation (not a keyframe): home with the
# shoulder J2 raised from -1.22 to -0.9 rad (at home link3 is 16.5 mm from the arm's mount
# and a J2 swing of -0.29 rad touches it) and the wrist J7 centred (home holds it at its
# -1.571 rad limit, which leaves only half of its window). Chosen by certifying 60 s
# excitations at 30 % of the joint ranges (seeds 0-2, simulated): certified minimum 11.0 to
# 12.7 mm with J2 at -0.9 rad; every draw from home came within the 5 mm margin.
EXCITATION_START: ArmPoses = {
    "right": (1.196, -0.9, -0.897, 1.576, 0.535, -0.018, 0.0),
    "left": (1.196, -0.9, -0.897, 1.576, 0.535, -0.018, 0.0),
}

# Keyframes of the model: name -> arm poses (everything else at the model's qpos0; the arm
# servos are commanded to the same angles).
KEYFRAMES: dict[str, ArmPoses] = {"home": HOME, "crossing_start": CROSSING_START}
