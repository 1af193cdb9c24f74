"""``rob-twin certify``: re-verify a saved plan's clearance certificate with coal.

Exit 0 only when the independent check agrees with every figure of the certificate; 1 on
any disagreement (a pair lower than certified, a pair missing from the list, a margin not
kept, another model's hash, a certificate that says not certified, weak pairs (box vs box
and alike) not judged by coal as the model's are, and every other claim the file makes that
differs from what certify re-derives from the model and the samples:
``rob_twin.planners.certificate_claims``; ``--json`` lists the fields in
``disagreement_fields``); 2 for a file that cannot be read or holds an invalid field
(``PlanFileError`` names the field and the valid range: NaN, shapes, limits, margins, pair
list, sizes, unknown keys, a ``robot.file`` that is no robot) or a ``--model`` that cannot be
loaded."""

from __future__ import annotations

import argparse

from rob_twin.cli.common import CommandResult


def _cmd_certify(args: argparse.Namespace) -> CommandResult:
    from rob_twin.models.names import DEFAULT_ROBOT
    from rob_twin.planners.certificate_check import verify_document
    from rob_twin.planners.plan_file import load_plan_file

    doc = load_plan_file(args.plan)  # exit 2 before the model is even loaded
    # the model: --model, else the robot the plan file names (a claim: the certificate's
    # model hash must match the model loaded), else the default robot
    named = (doc.get("robot") or {}).get("file")
    where = args.model or named or DEFAULT_ROBOT
    model = _model(where, str(args.plan), from_file=args.model is None and named is not None)
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
            kinds = ", ".join(f"{n} {why}" for why, n in report["weak_kinds"].items())
            print(f"  {report['weak_pairs']} weak pairs ({kinds}) judged by coal")
        for line in report["disagreements"]:
            print(f"  {line}")
        for line in report["notes"]:
            print(f"  note: {line}")
    return (0 if report["ok"] else 1), report


def _model(where: str, plan: str, from_file: bool):
    """The model at ``where`` (``load_model_of``); a model that cannot be loaded is bad
    input (exit 2) naming where the name came from: ``--model`` or the plan file's
    ``robot.file`` (a shipped robot or a robot file, .toml, there: never another path)."""
    from pathlib import Path

    from rob_twin.cli.common import UsageError
    from rob_twin.models.errors import RobTwinError
    from rob_twin.models.names import ROBOTS
    from rob_twin.models.robot_description import check_mjcf_files
    from rob_twin.models.robot_model import load_model_of
    from rob_twin.planners.plan_file import PlanFileError

    valid = "a shipped robot (" + ", ".join(ROBOTS) + "), a robot file (.toml)"
    if from_file and where not in ROBOTS and not where.endswith(".toml"):
        raise PlanFileError(plan, "robot.file", where, valid)
    try:
        if where not in ROBOTS and not where.endswith(".toml"):
            check_mjcf_files(Path(where))  # a plain scene: bounded before MuJoCo parses it
        return load_model_of(where)
    except RobTwinError as err:
        if from_file:
            raise PlanFileError(plan, "robot.file", where, f"{valid} that loads ({err})") from None
        raise
    except (ValueError, OSError) as err:  # MuJoCo's parser and compiler
        text = " ".join(str(err).split())
        if from_file:
            raise PlanFileError(plan, "robot.file", where, f"{valid} that loads ({text})") from None
        raise UsageError(
            f"--model={where!r} is invalid; valid: {valid} or an MJCF scene MuJoCo loads ({text})"
        ) from None


def register(sub) -> None:
    """Add ``certify`` to the ``rob-twin`` sub-command parser ``sub``."""
    cert = sub.add_parser(
        "certify",
        help="re-verify a saved plan's clearance certificate with coal "
        "(exit 0 agrees, 1 disagrees, 2 unreadable or invalid file)",
        description="Re-derive every claim of a plan file's clearance certificate from the "
        "model its hash names and from its samples (coal distances, joint ranges, the plan's "
        "own speeds) and compare. Exit 0: every claim agrees; 1: a claim disagrees (named); "
        "2: the file is unreadable or a value is out of range.",
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
