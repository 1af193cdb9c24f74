"""The ``rob-twin`` command line: the top layer, above ``twin`` and ``experiments``.

It may import every layer; no layer imports it. ``rob_twin.cli.main.main`` is the entry point
(``rob-twin``, or ``python -m rob_twin.cli``). One module per command group, each adding its
commands through ``register(sub)`` with their options next to their handlers: ``experiment``,
``demo``, ``run``, ``rehearse``, ``bus`` (replay, bank, host), ``certify``, ``view``,
``teleop``, ``scale`` (study, sweep); ``common`` holds what they share (parser, exit codes,
``--json``). Everything below the CLI is imported only when a command runs.
"""

import os as _os

# With no display, mujoco's default GL backend (GLFW) cannot open a context, and mujoco picks
# its backend once, when it is first imported: headless, the offscreen renderer (videos,
# pictures, head cameras) uses EGL unless the user chose a backend (MUJOCO_GL).
if not _os.environ.get("DISPLAY") and not _os.environ.get("WAYLAND_DISPLAY"):
    _os.environ.setdefault("MUJOCO_GL", "egl")
