"""The ``rob-twin`` command line: the top layer, above ``twin`` and ``experiments``.

It may import every layer; no layer imports it. ``rob_twin.cli.main.main`` is the entry point
(``rob-twin``, or ``python -m rob_twin.cli``).
"""
