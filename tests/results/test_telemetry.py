"""GPU telemetry parsing and summary (results/telemetry.py) on two real H200s' recorded nvidia-smi output
(tests/data/nvidia-smi-h200/ and the self-test host's, nvidia-smi-h200-selftest/)."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from pathlib import Path

import pytest

from ci_tools.results import telemetry
from tests.conftest import H200_SELFTEST, NVIDIA_SMI_H200, NVIDIA_SMI_H200_SELFTEST

H200 = NVIDIA_SMI_H200
H200S = [NVIDIA_SMI_H200, NVIDIA_SMI_H200_SELFTEST]
each_h200 = pytest.mark.parametrize("folder", H200S, ids=lambda p: p.name)


def load_csv(name: str, folder: Path = H200):
    samples, problems = telemetry.parse_csv((folder / name).read_text())
    assert problems == []
    return samples


def test_header_with_units_and_noheader_nounits_parse_alike():
    load = load_csv("telemetry-load.csv")
    idle = load_csv("telemetry-idle-noheader.csv")
    assert len(load) == 158 and len(idle) == 24
    first = load[0]
    assert first["t"] == dt.datetime(2026, 12, 1, 17, 43, 24, 309000, tzinfo=dt.timezone.utc).timestamp()
    assert (first["power_w"], first["sm_mhz"], first["max_sm_mhz"], first["reasons"]) == (80.33, 345, 1980, 1)
    assert first["mem_total_mib"] == 143771 and first["power_limit_w"] == 700
    assert {s["name"] for s in load + idle} == {"NVIDIA H200"}


@each_h200
def test_under_load_the_h200_is_power_capped(folder):
    samples = load_csv("telemetry-load.csv", folder)
    assert {s["name"] for s in samples} == {"NVIDIA H200"} and len({s["uuid"] for s in samples}) == 1
    busy = [s for s in samples if s["reasons"] == 0x4]
    window = (busy[0]["t"], busy[-1]["t"])
    summary = telemetry.summarize(samples, window, {"input_total": 9000, "output_total": 1000})
    [gpu] = summary["gpus"]
    assert summary["power_capped"] is True and gpu["power_capped_share"] == 1.0
    assert gpu["clock_event_share"]["sw_power_cap"] == 1.0 and gpu["clock_event_share"]["sw_thermal"] == 0.0
    # the cap holds power.draw (a one-second average) at the 700 W limit, one reading 701.92 W
    assert 1400 <= gpu["sm_clock_mhz"]["mean"] <= 1520 and gpu["power_w"]["max"] <= 1.01 * gpu["power_limit_w"]
    # energy: an independent trapezoid over the same samples
    pts = [(s["t"], s["power_w"]) for s in samples if window[0] <= s["t"] <= window[1]]
    want = sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(pts, pts[1:]))
    assert gpu["energy_j"] == pytest.approx(want, rel=1e-12) and gpu["coverage"] == 1.0
    assert summary["energy_per_token"] == {"j_per_output_token": pytest.approx(want / 1000),
                                           "j_per_token": pytest.approx(want / 10000)}
    assert summary["power_w_total_mean"] == pytest.approx(want / (window[1] - window[0]))
    assert 680 < summary["power_w_total_mean"] < 700


@each_h200
def test_idle_is_not_power_capped(folder):
    summary = telemetry.summarize(load_csv("telemetry-idle-noheader.csv", folder))
    [gpu] = summary["gpus"]
    assert summary["power_capped"] is False and gpu["clock_event_share"]["gpu_idle"] == 1.0
    assert 80 < gpu["power_w"]["mean"] < 82 and gpu["utilization_pct"]["max"] == 0 and gpu["coverage"] == 1.0


@pytest.mark.parametrize("csv", [NVIDIA_SMI_H200 / "telemetry-load.csv", NVIDIA_SMI_H200_SELFTEST / "telemetry-load.csv",
                                 H200_SELFTEST / "agentic" / "gpu_telemetry.csv",
                                 H200_SELFTEST / "fixed" / "gpu_telemetry.csv"], ids=lambda p: p.parent.name)
def test_energy_is_the_correctly_rounded_sum_whatever_the_interpreter(csv):
    """Python 3.12's sum() of floats compensates, 3.11's does not: a result processed on the GPU host (3.12)
    must read the same J/token on a reviewer's 3.11 (the self-test's agentic job read ...174 there, ...176 here)."""
    samples, _ = telemetry.parse_csv(csv.read_text())
    pts = [(s["t"], s["power_w"]) for s in samples]
    terms = [(t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(pts, pts[1:])]
    [gpu] = telemetry.summarize(samples, (pts[0][0], pts[-1][0]))["gpus"]
    assert gpu["energy_j"] == float(sum(map(Fraction, terms)))


def test_window_beyond_the_samples_holds_the_edges_and_reports_coverage():
    samples = load_csv("telemetry-idle-noheader.csv")
    t0, t1 = samples[0]["t"], samples[-1]["t"]
    summary = telemetry.summarize(samples, (t0 - (t1 - t0), t1))
    gpu = summary["gpus"][0]
    assert gpu["coverage"] == pytest.approx(0.5)
    assert gpu["energy_j"] == pytest.approx(2 * (t1 - t0) * gpu["power_w"]["mean"], rel=0.01)


def test_unknown_power_gives_no_energy_and_bad_lines_are_counted():
    text = (H200 / "telemetry-idle-noheader.csv").read_text().splitlines()
    cells = text[0].split(", ")
    cells[7] = "[N/A]"
    na_rows = [", ".join(cells)] * 3 + ["2026/12/01 17:44:05.0, 0, cut by SIGKILL"]
    samples, problems = telemetry.parse_csv("\n".join(na_rows), utc_offset_s=3600)
    assert len(samples) == 3 and samples[0]["power_w"] is None
    assert problems[-1] == "1 line(s) were not samples" and "3 fields" in problems[0]
    summary = telemetry.summarize(samples, tokens={"output_total": 10})
    assert summary["energy_j"] is None and summary["energy_per_token"] is None
    # local time 18:44 at UTC+1 is 17:44 UTC
    assert samples[0]["t"] == dt.datetime(2026, 12, 1, 16, 44, 4, 444000, tzinfo=dt.timezone.utc).timestamp()


def test_several_gpus_add_up():
    one = load_csv("telemetry-idle-noheader.csv")
    two = one + [{**s, "index": "1", "uuid": "GPU-other"} for s in one]
    s1, s2 = telemetry.summarize(one), telemetry.summarize(two)
    assert len(s2["gpus"]) == 2 and s2["energy_j"] == pytest.approx(2 * s1["energy_j"])
