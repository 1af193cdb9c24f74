"""The ``mbm`` benchmark's figures from its rows (no MotionBenchMaker data needed): per set
and margin the valid, solved and within-1-s counts; the issue's aims at margin 0 with the
figure measured and met or not; one verdict line naming every aim missed."""

from __future__ import annotations

from rob_twin.experiments import bench_mbm as bm


def _row(set_name: str, margin_mm: float, status: str | None, ms: float = 0.0) -> dict:
    row = {"set": set_name, "margin_mm": margin_mm, "load_ms": 1.0, "group_ms": 1.0}
    if status is None:
        return row | {"valid": False, "why_invalid": "goal in collision"}
    row |= {
        "valid": True,
        "ours_status": status,
        "ours_ms": ms,
        "ours_stages_ms": dict.fromkeys(bm.STAGES, ms / 4),
    }
    if status == "success":
        row.update(certified=True, certified_min_mm=1.0)
    return row


def _result(rows_by_key: dict[str, list[dict]]) -> dict:
    result = {"sets": {k: bm.summarize(rows, 1.0) for k, rows in rows_by_key.items()}}
    result["aims"] = bm.aims(result)
    result["verdict"] = bm.verdict(result)
    return result


def test_the_aims_are_judged_at_margin_0_and_the_verdict_names_what_is_missed():
    easy = [_row("easy", 0.0, "success", 30.0) for _ in range(19)] + [_row("easy", 0.0, None)]
    easy.append(_row("easy", 0.0, "success", 1200.0))  # solved, but not within 1 s
    medium = [_row("medium", 0.0, "success", 400.0) for _ in range(9)]
    medium.append(_row("medium", 0.0, "timeout", 1000.0))
    at_5mm = [_row("easy", 5.0, "timeout", 1000.0)]  # reported, not an aim
    result = _result({"easy @ 0 mm": easy, "medium @ 0 mm": medium, "easy @ 5 mm": at_5mm})
    s = result["sets"]["easy @ 0 mm"]
    assert (s["valid"], s["ours"]["solved"], s["ours"]["solved_within_1s"]) == (20, 20, 19)
    aims = {(a["set"], a["aim"]): a for a in result["aims"]}
    assert len(aims) == 6  # three aims for each set at 0 mm, none at 5 mm
    assert aims[("easy @ 0 mm", ">= 95% solved within 1 s")]["met"]  # 19 of 20
    assert aims[("easy @ 0 mm", "median <= 50 ms")]["met"]
    assert not aims[("medium @ 0 mm", ">= 95% solved within 1 s")]["met"]  # 9 of 10
    assert not aims[("medium @ 0 mm", "median <= 50 ms")]["met"]
    assert all(
        aims[(k, "every solved plan certified")]["met"] for k in ("easy @ 0 mm", "medium @ 0 mm")
    )
    assert result["verdict"].startswith("mbm: 4 of 6 aims met")
    assert "medium @ 0 mm: >= 95% solved within 1 s (9 of 10 (90.0%))" in result["verdict"]
    assert "easy @ 5 mm" not in result["verdict"]


def test_an_uncertified_plan_misses_its_aim():
    rows = [_row("easy", 0.0, "success", 30.0) for _ in range(3)]
    rows[0]["certified"] = False
    result = _result({"easy @ 0 mm": rows})
    certified = [a for a in result["aims"] if a["aim"] == "every solved plan certified"]
    assert certified[0]["measured"] == "2 of 3" and not certified[0]["met"]
