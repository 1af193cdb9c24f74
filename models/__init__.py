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

_EXPORTS = {
    "load_scene": "models.loading",
    "load_pinocchio": "models.loading",
    "apply_home": "models.loading",
    "apply_keyframe": "models.loading",
    "keyframe_state": "models.loading",
    "SCENE_PATH": "models.loading",
    "ROBOT_PATH": "models.loading",
    "robot_spec": "models.build",
    "scene_spec": "models.build",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
