"""The robot-description layer: ROB's dimensions with provenance, the model builder,
the loaders (MuJoCo, Pinocchio) and the generated MJCF under ``models/rob/``.

``models.dimensions`` is pure data (no mujoco, no pinocchio), so ``controllers`` may read it;
``models.build`` and ``models.loading`` import mujoco. Layers above: ``planners`` -> ``twin``
-> ``experiments``.
"""
