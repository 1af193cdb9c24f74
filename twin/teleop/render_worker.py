"""The live video's render process: ``python -m rob_twin.twin.teleop.render_worker FD``.

Started by ``rob_twin.twin.teleop.video.LiveVideo`` with one end of a socket pair as file
descriptor ``FD`` (a ``multiprocessing.connection.Connection``): it first receives the
model and the ``VideoConfig``, then runs ``render_process_main``. Its own interpreter, so
that the caller's ``__main__`` is never re-run (as ``multiprocessing``'s spawn would) and
rendering never shares the closed loop's interpreter lock. A closed pipe (the parent
ended) ends it.
"""

from __future__ import annotations

import sys
from multiprocessing.connection import Connection


def main(argv: list[str]) -> int:
    import signal

    from rob_twin.twin.teleop.video import render_process_main

    # Ctrl-C in a terminal reaches the whole process group: the parent ends this process
    # through the pipe, after its own clean shutdown
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    conn = Connection(int(argv[0]))
    try:
        model, config = conn.recv()
    except EOFError:
        return 0
    render_process_main(conn, model, config)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
