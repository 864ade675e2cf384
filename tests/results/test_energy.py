"""GPU energy over the benchmark window, as InferenceX's aggregate_power computes it (trapezoid per GPU,
linear interpolation at the window's edges, a validity flag with reasons), on a real H200's nvidia-smi
samples (`tests/data/nvidia-smi-h200/`), in `results process` and with verdicts in `results compare`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ci_tools.results import compare
from ci_tools.results.process import PointInfo, process_dir
from ci_tools.results import telemetry as tel
from tests.conftest import AIPERF_EXPORT, NVIDIA_SMI_H200

H200 = NVIDIA_SMI_H200
EXPORT = AIPERF_EXPORT


@pytest.fixture
def load():
    samples, problems = tel.parse_csv((H200 / "telemetry-load.csv").read_text())
    assert problems == []
    return samples


def trapezoid(pts):
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(pts, pts[1:]))


def test_energy_over_a_window_between_samples_interpolates_its_edges(load):
    busy = [s for s in load if s["reasons"] == 0x4]
    # a window whose edges fall between samples: the edge power is interpolated, not the nearest sample
    start, end = busy[3]["t"] + 0.1, busy[-4]["t"] - 0.07
    e = tel.energy(load, (start, end), expected_gpus=1, tokens={"input_total": 9000, "output_total": 1000},
                   successful=30)
    assert e["valid"] is True and e["reasons"] == [] and e["schema"] == 2
    pts = [(s["t"], s["power_w"]) for s in load]

    def at(t):
        (t0, p0), (t1, p1) = next((a, b) for a, b in zip(pts, pts[1:]) if a[0] <= t <= b[0])
        return p0 + (p1 - p0) * (t - t0) / (t1 - t0)

    want = trapezoid([(start, at(start))] + [p for p in pts if start < p[0] < end] + [(end, at(end))])
    assert e["total_gpu_energy_j"] == pytest.approx(want, rel=1e-12)
    assert e["j_per_output_token"] == pytest.approx(want / 1000)
    assert e["j_per_input_token"] == pytest.approx(want / 9000)
    assert e["j_per_total_token"] == pytest.approx(want / 10000)
    assert e["j_per_request"] == pytest.approx(want / 30)
    assert 680 < e["avg_power_w"] < 700 and e["avg_total_gpu_power_w"] == e["avg_power_w"]


def test_inferencex_eight_gpus_at_600_w_for_60_s():
    """InferenceX's own case: 8 GPUs at 600 W over [100, 160], 100 W before and 200 W after (excluded)."""
    samples = [{"t": float(t), "index": str(g), "power_w": 100.0 if t < 100 else 200.0 if t > 160 else 600.0}
               for g in range(8) for t in range(95, 166)]
    e = tel.energy(samples, (100.0, 160.0), expected_gpus=8,
                   tokens={"input_total": 240000, "output_total": 30000}, successful=30)
    assert e["valid"] and e["total_gpu_energy_j"] == pytest.approx(288000)
    assert e["avg_power_w"] == pytest.approx(600) and e["avg_total_gpu_power_w"] == pytest.approx(4800)
    assert e["j_per_request"] == pytest.approx(9600) and e["j_per_input_token"] == pytest.approx(1.2)
    assert e["j_per_output_token"] == pytest.approx(9.6)


def _drop(samples, lo, hi):
    return [s for s in samples if not lo < s["t"] < hi]


@pytest.mark.parametrize("case, edit, window, gpus, reasons", [
    ("no telemetry file", lambda s: None, "busy", 1, [tel.TELEMETRY_MISSING]),
    ("no benchmark window", lambda s: s, None, 1, [tel.WINDOW_MISSING]),
    ("window starts before the first sample", lambda s: s, "early", 1, [tel.NOT_BRACKETED]),
    ("window ends after the last sample", lambda s: s, "late", 1, [tel.NOT_BRACKETED]),
    ("a 4 s hole in the samples", "hole", "busy", 1, [tel.GAP]),
    ("one sample only", lambda s: s[:1], "one", 1, [tel.TOO_FEW]),
    ("the point has 4 GPUs, nvidia-smi saw 1", lambda s: s, "busy", 4, [tel.GPU_COUNT]),
    ("power [N/A] throughout", lambda s: [{**x, "power_w": None} for x in s], "busy", 1, [tel.NO_POWER]),
])
def test_invalid_power_measurements_give_no_energy_and_say_why(load, case, edit, window, gpus, reasons):
    busy = [s for s in load if s["reasons"] == 0x4]
    mid = busy[len(busy) // 2]["t"]
    samples = _drop(load, mid - 2, mid + 2) if edit == "hole" else edit(load)
    windows = {"busy": (busy[0]["t"], busy[-1]["t"]), "early": (load[0]["t"] - 5, busy[-1]["t"]),
               "late": (busy[0]["t"], load[-1]["t"] + 1), "one": (load[0]["t"] - 1, load[0]["t"] + 1), None: None}
    e = tel.energy(samples, windows[window], expected_gpus=gpus, tokens={"output_total": 10}, successful=3)
    assert e["valid"] is False and e["reasons"] == reasons, case
    assert "total_gpu_energy_j" not in e and "j_per_output_token" not in e


@pytest.fixture
def job(tmp_path: Path, load):
    """AIPerf's real export moved into the H200's load phase, the H200's CSV beside it as the runner writes it."""
    d = tmp_path / "job"
    shutil.copytree(EXPORT, d)
    for f in d.iterdir():
        f.chmod(0o644)
    busy = [s for s in load if s["reasons"] == 0x4]
    path = d / "profile_export.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    first = min(r["metadata"]["request_start_ns"] for r in recs)
    shift = int((busy[2]["t"] + 0.5) * 1e9) - first
    for r in recs:
        for k in ("credit_issued_ns", "request_start_ns", "request_ack_ns", "request_end_ns"):
            if isinstance(r["metadata"].get(k), int):
                r["metadata"][k] += shift
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    shutil.copy(H200 / "telemetry-load.csv", d / "gpu_telemetry.csv")
    (d / "gpu_telemetry.csv").chmod(0o644)
    return d


def test_results_process_writes_energy_and_headline_figures(job: Path):
    r = process_dir(job, PointInfo(name="stub", tp=1, conc=4, scenario="fixed-seq-len", model="stub"))
    e = r["energy"]
    assert e["valid"] is True, e["reasons"]
    assert e["j_per_output_token"] == pytest.approx(e["total_gpu_energy_j"] / r["tokens"]["output_total"])
    assert e["j_per_request"] == pytest.approx(e["total_gpu_energy_j"] / r["requests"]["successful"])
    assert 680 < e["avg_power_w"] < 700  # the window is inside the H200's load phase
    assert r["headline"]["j_per_output_token"] == e["j_per_output_token"]
    assert r["gpu_telemetry"]["power_capped"] is True


def test_results_process_honours_the_telemetry_hosts_utc_offset(job: Path):
    # the sampler host was on UTC+1: its local times are an hour ahead, the samples an hour earlier
    (job / "gpu_telemetry.meta.json").write_text(json.dumps({"utc_offset_s": 3600}))
    r = process_dir(job, PointInfo(name="stub", tp=1, conc=4, scenario="fixed-seq-len", model="stub"))
    assert r["energy"]["valid"] is False and r["energy"]["reasons"] == [tel.NOT_BRACKETED]
    assert r["headline"]["j_per_output_token"] is None


def test_results_process_without_telemetry_says_so(job: Path):
    (job / "gpu_telemetry.csv").unlink()
    r = process_dir(job, PointInfo(name="stub", tp=2, conc=4, scenario="fixed-seq-len", model="stub"))
    assert r["energy"] == {"schema": 2, "valid": False, "reasons": [tel.TELEMETRY_MISSING]}
    assert "gpu_telemetry" not in r


def res(name, j, tok=1000.0):
    return {"valid": True, "point": {"name": name, "config-key": "k", "tp": 1, "conc": 4},
            "headline": {"tok_s_gpu": tok, "intvty_p90": 50.0, "j_per_output_token": j}}


@pytest.mark.parametrize("head, base, want", [
    (0.7, 1.0, compare.IMPROVED),      # less energy per token is better
    (1.3, 1.0, compare.REGRESSED),
    (1.0, 1.0, compare.EQUIVALENT),
    (None, 1.0, None),                 # the PR's power measurement was not valid: nothing to compare
])
def test_compare_gives_energy_per_token_a_verdict(head, base, want):
    (pc,) = compare.compare_points([res("a", head)], [res("a", base)])
    assert pc.cells["j_per_output_token"].verdict == want


def test_energy_columns_only_where_measured():
    from ci_tools.results.compare_render import markdown

    with_energy = markdown(compare.compare_points([res("a", 0.7)], [res("a", 1.0)]))
    without = markdown(compare.compare_points([res("a", None)], [res("a", None)]))
    assert "J/output token" in with_energy.splitlines()[0] and "J/output token" not in without
    # the number fell (▼) and that is better for energy (improved): the arrow is the number's direction
    assert "0.7\u00a0J<br><sub>main\u00a01\u00a0J · ▼\u00a0-30.0% · **🟢\u00a0improved" in with_energy


def test_results_process_says_the_energy(job: Path):
    import click
    from click.testing import CliRunner

    from ci_tools.cli import main

    argv = ["results", "process", str(job), "--tp", "1", "--conc", "4", "--scenario", "fixed-seq-len", "--model", "stub"]
    r = CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])
    assert "  energy          " in r.output and "J/output token" in r.output and "W per GPU" in r.output
    (job / "gpu_telemetry.csv").unlink()
    r = CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])
    assert "energy          not measured: telemetry_file_missing" in r.output


@pytest.mark.parametrize("meta", ['{"utc_offset_s": "abc"}', '{"utc_offset_s": 1e400}', '{"utc_offset_s": true}',
                                  '{"utc_offset_s": 86400}', "[3600]"])
def test_a_broken_telemetry_meta_file_is_a_located_error(job: Path, meta):
    """A string offset was an internal error (exit 3), a list an AttributeError in `results report`."""
    from ci_tools.errors import InputError

    (job / "gpu_telemetry.meta.json").write_text(meta + "\n")
    with pytest.raises(InputError, match=r"gpu_telemetry\.meta\.json: (utc_offset_s|expected a JSON object)"):
        process_dir(job, PointInfo(name="stub", tp=1, conc=4, scenario="fixed-seq-len", model="stub"))
