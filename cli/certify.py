"""``rob-twin certify``: re-verify a saved plan's clearance certificate with coal (exit 1 on
any disagreement)."""

from __future__ import annotations

import argparse

from rob_twin.cli.common import CommandResult


def _cmd_certify(args: argparse.Namespace) -> CommandResult:
    from rob_twin.models.loading import SCENE_PATH, load_scene
    from rob_twin.planners.certificate_check import verify_document
    from rob_twin.planners.plan_file import load_plan_file

    doc = load_plan_file(args.plan)
    model = load_scene(args.model or SCENE_PATH)
    report = verify_document(doc, model).as_dict()
    report["plan"] = str(args.plan)
    if not args.json:
        verdict = "AGREES" if report["ok"] else "DISAGREES"
        print(
            f"{verdict}: certified minimum {report['certified_min_m'] * 1e3:.3f} mm "
            f"({report['pair']}), {report['pairs_checked']} pairs, "
            f"{report['coal_queries']} coal queries"
        )
        for line in report["disagreements"]:
            print(f"  {line}")
    return (0 if report["ok"] else 1), report


def register(sub) -> None:
    """Add ``certify`` to the ``rob-twin`` sub-command parser ``sub``."""
    cert = sub.add_parser(
        "certify",
        help="re-verify a saved plan's clearance certificate with coal "
        "(exit 1 on any disagreement)",
    )
    cert.add_argument("plan", help="plan file (JSON, rob_twin.planners.plan_file)")
    cert.add_argument("--model", help="scene XML (default: the generated ROB scene)")
    cert.add_argument("--json", action="store_true", help="print exactly one JSON object")
    cert.set_defaults(func=_cmd_certify, json_result=True)
