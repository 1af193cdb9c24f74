"""Headless, the command line renders with EGL even when the user's shell sets no MUJOCO_GL
(mujoco fixes its GL backend at first import; GLFW, its default, needs a display)."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = "import os, rob_twin.cli; print(os.environ.get('MUJOCO_GL'))"


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY")}
    env.pop("WAYLAND_DISPLAY", None)
    return env | extra


def test_no_display_and_no_choice_means_egl():
    out = subprocess.run([sys.executable, "-c", PROBE], env=_env(), capture_output=True, text=True)
    assert out.stdout.strip() == "egl", out.stderr


def test_the_users_backend_and_a_display_are_left_alone():
    chosen = subprocess.run(
        [sys.executable, "-c", PROBE], env=_env(MUJOCO_GL="osmesa"), capture_output=True, text=True
    )
    assert chosen.stdout.strip() == "osmesa", chosen.stderr
    shown = subprocess.run(
        [sys.executable, "-c", PROBE], env=_env(DISPLAY=":99"), capture_output=True, text=True
    )
    assert shown.stdout.strip() == "None", shown.stderr
