"""The Damiao host-side modules stay in the controllers layer: no mujoco, no pinocchio."""

from __future__ import annotations

import subprocess
import sys


def test_damiao_controllers_import_neither_mujoco_nor_pinocchio():
    code = (
        "import sys\n"
        "import rob_twin.controllers.damiao_codec, rob_twin.models.damiao_motors\n"
        "import rob_twin.controllers.damiao_errors\n"
        "import rob_twin.controllers.damiao_transport, rob_twin.controllers.damiao_driver\n"
        "bad = [m for m in ('mujoco', 'pinocchio') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
