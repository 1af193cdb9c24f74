"""The robot-description layer: ROB's dimensions with provenance, its named poses, the model
builder (``mujoco.MjSpec``), the loaders (MuJoCo, Pinocchio) and the generated MJCF under
``models/rob/``.

``models.dimensions`` and ``models.poses`` are pure data (no mujoco, no pinocchio), so
``controllers`` may read them; ``models.build`` and ``models.loading`` import mujoco. Layers
above: ``planners`` -> ``twin`` -> ``experiments``.

Start here::

    from models import load_scene, apply_home, keyframe_state, dimensions
"""

from controllers.lazy_exports import lazy_exports

_MODULES = {
    "models.loading": (
        "load_scene",
        "load_pinocchio",
        "apply_home",
        "apply_keyframe",
        "keyframe_state",
        "SCENE_PATH",
        "ROBOT_PATH",
    ),
    "models.build": ("robot_spec", "scene_spec"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)
