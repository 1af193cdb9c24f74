"""The ``rob-twin`` command line: the top layer, above ``twin`` and ``experiments``.

It may import every layer; no layer imports it. ``rob_twin.cli.main.main`` is the entry point
(``rob-twin``, or ``python -m rob_twin.cli``). One module per command group, each adding its
commands through ``register(sub)`` with their options next to their handlers: ``experiment``,
``demo``, ``run``, ``rehearse``, ``bus`` (replay, bank, host), ``certify``, ``view``,
``teleop``, ``scale`` (study, sweep); ``common`` holds what they share (parser, exit codes,
``--json``). Everything below the CLI is imported only when a command runs.
"""
