"""``python -m rob_twin.cli``: the same as the ``rob-twin`` command."""

from rob_twin.cli.main import main

raise SystemExit(main())
