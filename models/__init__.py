"""The robot-description layer: ROB's dimensions with provenance, its named poses, the model
builder (``mujoco.MjSpec``), the loaders (MuJoCo, Pinocchio) and the generated MJCF under
``models/rob/``.

``rob_twin.models.dimensions`` and ``rob_twin.models.poses`` are pure data (no mujoco, no
pinocchio), so ``controllers`` may read them; ``rob_twin.models.build`` and
``rob_twin.models.loading`` import mujoco. It is the bottom layer: it imports nothing of the
project above it (``controllers`` -> ``planners`` -> ``twin`` -> ``experiments`` -> ``cli``).

Start here::

    from rob_twin.models import load_scene, apply_home, keyframe_state, dimensions
"""

from rob_twin.models.lazy_exports import lazy_exports

_MODULES = {
    "rob_twin.models.loading": (
        "load_scene",
        "load_pinocchio",
        "apply_home",
        "apply_keyframe",
        "keyframe_state",
        "SCENE_PATH",
        "ROBOT_PATH",
    ),
    "rob_twin.models.build": ("robot_spec", "scene_spec"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)
