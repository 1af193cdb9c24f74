"""``rob-twin compare``: a recording made by a twin with hidden parameters, compared with the
twin that knows them (a calibration file) and with the twin as it is; the lag of a recording
whose feedback stamps are late; bad inputs exit 2 with one line."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from rob_twin.cli.main import main
from rob_twin.models.loading import load_scene
from rob_twin.twin.bus.recording import sidecar_path
from rob_twin.twin.calibration.calibration_file import calibration_document, save_calibration
from rob_twin.twin.calibration.compare import estimate_lag_s
from rob_twin.twin.calibration.synthetic import record_hidden
from rob_twin.twin.rehearsal import wave_source

HIDDEN = {"right/j2/damping": 3.0, "right/j4/armature": 0.2, "left/j1/lag_s": 0.02}
FEEDBACK = re.compile(r"^\((\d+\.\d+)\) (can\d+) (09[1-7])#")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """3 s of both arms waving, recorded (100 Hz feedback) from a twin whose parameters are
    HIDDEN, and a calibration file that holds them."""
    folder = tmp_path_factory.mktemp("compare")
    path = record_hidden(folder / "hidden.log", HIDDEN, 3.0, source=wave_source)
    params = {n: {"value": v, "fitted": True} for n, v in HIDDEN.items()}
    doc = calibration_document("hidden", load_scene(), params, [], {}, [])
    return {"rec": path, "cal": save_calibration(folder / "hidden_cal.json", doc)}


def compare(capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["compare", *args, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


@pytest.fixture(scope="module")
def calibrated(made):
    """compare with the hidden parameters as the calibration, tolerance 0.5 mrad: (exit code,
    report, output folder)."""
    out = made["rec"].parent / "calibrated"
    code = main(
        ["compare", str(made["rec"]), "--calibration", str(made["cal"]), "--tolerance-rad",
         "0.0005", "--out", str(out), "--json"]
    )  # fmt: skip
    return code, json.loads((out / "compare.json").read_text()), out


def test_the_hidden_parameters_predict_it_within_a_tight_tolerance(calibrated):
    code, report, out = calibrated
    assert code == 0, report
    assert report["hardware_io"] is False and report["within_tolerance"] is True
    assert report["calibration"]["name"] == "hidden"
    assert len(report["joints"]) == 14
    assert max(j["max_mrad"] for j in report["joints"].values()) < 0.5  # 1/128 deg steps
    for plot in report["plots"]:
        assert (out / plot.rsplit("/", 1)[-1]).stat().st_size > 10_000


def test_uncalibrated_errors_are_larger_and_exceed_a_tight_tolerance(
    made, calibrated, tmp_path, capsys
):
    calibrated = calibrated[1]
    code, report, _ = compare(
        capsys, str(made["rec"]), "--tolerance-rad", "0.0005", "--out", str(tmp_path / "b")
    )
    assert code == 1
    assert report["calibration"] == "uncalibrated" and report["within_tolerance"] is False
    assert "right/j4" in report["exceeded"] and "left/j1" in report["exceeded"]
    for joint in ("right/j4", "left/j1"):
        assert report["joints"][joint]["rms_mrad"] > 5 * calibrated["joints"][joint]["rms_mrad"]
        assert report["joints"][joint]["over_tolerance_s"] > 0.1


def test_the_human_table_names_every_joint(made, tmp_path, capsys):
    code = main(["compare", str(made["rec"]), "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and "EXCEEDED on " in out and "left/j1" in out.split("EXCEEDED on ")[1]
    assert "| joint | RMS error [mrad] | max error [mrad] | lag [ms]" in out
    assert all(f"| {a}/j{j} |" in out for a in ("right", "left") for j in range(1, 8))
    assert "uncalibrated" in out and "hardware_io: false" in out


def _late_feedback(src, dst, late_s: float) -> None:
    """``src`` with every feedback frame stamped ``late_s`` later (re-sorted by time), and its
    sidecar, whose first frame is then a command frame."""
    lines = []
    for k, line in enumerate(src.read_text().splitlines()):
        m = FEEDBACK.match(line)
        t = float(line[1 : line.index(")")]) + (late_s if m else 0.0)
        lines.append((t, k, f"({t:.6f})" + line[line.index(")") + 1 :]))
    lines.sort()
    dst.write_text("".join(text + "\n" for _, _, text in lines))
    side = json.loads(sidecar_path(src).read_text())
    side["first_timestamp_s"] = side["first_frame_sim_s"] = lines[0][0]
    sidecar_path(dst).write_text(json.dumps(side))


def test_a_recording_whose_feedback_is_10_ms_late_shows_a_10_ms_lag(
    made, calibrated, tmp_path, capsys
):
    late = tmp_path / "late.log"
    _late_feedback(made["rec"], late, 0.010)
    code, report, _ = compare(
        capsys, str(late), "--calibration", str(made["cal"]), "--out", str(tmp_path / "o")
    )
    lags = [j["lag_ms"] for j in report["joints"].values() if j["lag_ms"] is not None]
    assert len(lags) >= 6, report["joints"]
    assert np.median(lags) == pytest.approx(10.0, abs=1.0)
    lags = [j["lag_ms"] for j in calibrated[1]["joints"].values() if j["lag_ms"] is not None]
    assert abs(np.median(lags)) < 1.0


def test_the_lag_is_found_between_samples():
    t = np.arange(0.0, 4.0, 0.01)  # 100 Hz samples
    predicted = np.sin(2 * np.pi * 0.7 * t)
    recorded = np.sin(2 * np.pi * 0.7 * (t - 0.0073))
    assert estimate_lag_s(t, recorded, predicted) == pytest.approx(0.0073, abs=0.0005)
    assert estimate_lag_s(t, np.zeros_like(t), predicted) is None  # nothing moved


def _lines(path, keep) -> list[str]:
    return [line for line in path.read_text().splitlines() if keep(line)]


def bad_inputs(made, tmp_path) -> dict[str, tuple[list[str], str]]:
    """{case: (compare arguments, what the one line must say)}."""
    rec = made["rec"]
    cut = tmp_path / "cut.log"
    cut.write_text(rec.read_text()[:-20])  # the writer was cut off mid-line
    sidecar_path(cut).write_text(sidecar_path(rec).read_text())
    foreign = tmp_path / "foreign.log"  # no sidecar: another robot's bus
    foreign.write_text(rec.read_text() + "(2.999000) can10 123#0011223344556677 R\n")
    mute = tmp_path / "mute.log"  # the host's commands only
    mute.write_text("".join(line + "\n" for line in _lines(rec, lambda s: not FEEDBACK.match(s))))
    other = json.loads(made["cal"].read_text()) | {"model_hash": "0" * 16}
    (tmp_path / "other.json").write_text(json.dumps(other))
    return {
        "truncated": ([str(cut)], "truncated"),
        "foreign ids": ([str(foreign)], "0x123"),
        "no feedback": ([str(mute)], "no drive feedback"),
        "another model": (
            [str(rec), "--calibration", str(tmp_path / "other.json")],
            "model_hash",
        ),
    }


def test_bad_inputs_exit_2_with_one_line(made, tmp_path, capsys):
    for case, (args, says) in bad_inputs(made, tmp_path).items():
        code = main(["compare", *args, "--out", str(tmp_path / "never")])
        out, err = capsys.readouterr()
        assert code == 2, (case, err)
        assert len(err.strip().splitlines()) == 1 and says in err, (case, err)
        assert not (tmp_path / "never").exists(), case  # refused before any output
