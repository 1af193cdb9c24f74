"""``rob-twin certify``: re-verify a saved plan's clearance certificate with coal.

Exit 0 only when the independent check agrees with every figure of the certificate; 1 on
any disagreement (a pair lower than certified, a pair missing from the list, a margin not
kept, another model's hash, a certificate that says not certified, weak pairs (box vs box
and alike) not judged by coal as the model's are); 2 for a file that
cannot be read or holds an invalid field (``PlanFileError`` names the field and the valid
range: NaN, shapes, limits, margins, pair list, sizes)."""

from __future__ import annotations

import argparse

from rob_twin.cli.common import CommandResult


def _cmd_certify(args: argparse.Namespace) -> CommandResult:
    from rob_twin.models.names import DEFAULT_ROBOT
    from rob_twin.models.robot_model import load_model_of
    from rob_twin.planners.certificate_check import verify_document
    from rob_twin.planners.plan_file import load_plan_file

    doc = load_plan_file(args.plan)  # exit 2 before the model is even loaded
    # the model: --model, else the robot the plan file names (a claim: the certificate's
    # model hash must match the model loaded), else the default robot
    named = (doc.get("robot") or {}).get("file")
    where = args.model or named or DEFAULT_ROBOT
    model = load_model_of(where)
    report = verify_document(doc, model, where=str(args.plan)).as_dict()
    report["plan"] = str(args.plan)
    report["model"] = where
    if not args.json:
        verdict = "AGREES" if report["ok"] else "DISAGREES"
        low = report["certified_min_m"]
        figure = "not compared" if low is None else f"{low * 1e3:.3f} mm ({report['pair']})"
        print(
            f"{verdict}: certified minimum {figure}, {report['pairs_checked']} pairs, "
            f"{report['coal_queries']} coal queries"
        )
        if report["weak_pairs"]:
            print(f"  {report['weak_pairs']} weak pairs (box vs box and alike) judged by coal")
        for line in report["disagreements"]:
            print(f"  {line}")
        for line in report["notes"]:
            print(f"  note: {line}")
    return (0 if report["ok"] else 1), report


def register(sub) -> None:
    """Add ``certify`` to the ``rob-twin`` sub-command parser ``sub``."""
    cert = sub.add_parser(
        "certify",
        help="re-verify a saved plan's clearance certificate with coal "
        "(exit 0 agrees, 1 disagrees, 2 unreadable or invalid file)",
    )
    cert.add_argument(
        "plan", help="plan file (JSON, written by rob-twin plan or planners.save_plan)"
    )
    cert.add_argument(
        "--model",
        default=None,
        help="the model the plan was made on: a shipped robot (rob, openarm), a robot file "
        "(robot.toml) or a scene XML (default: the robot the plan file names, as rob-twin "
        "plan writes it; else rob, the generated ROB scene)",
    )
    cert.add_argument("--json", action="store_true", help="print exactly one JSON object")
    cert.set_defaults(func=_cmd_certify, json_result=True)
