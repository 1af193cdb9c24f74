"""Children that a test stops with Ctrl-C (SIGINT) start with SIGINT at its default.

A shell's background job (``make test &``) starts with SIGINT ignored, and Python keeps an
inherited ignored SIGINT ignored: such a child never sees the test's Ctrl-C (can.logger's
journey then failed after 30 s, and the teleop server's teardown waited 15 s to kill it).
"""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """``preexec_fn`` of ``subprocess.Popen``: SIGINT back at its default in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
