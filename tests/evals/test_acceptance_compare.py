"""The measured acceptance of an eval row beside the synthetic one of its throughput rows
(ci_tools/evals/acceptance.py): record and warning as a table; the policy's section and its schema."""

from __future__ import annotations

import pytest

from ci_tools.evals.acceptance import DEFAULT_TOLERANCE, compare, section_findings, tolerance_of
from ci_tools.yaml.located import load_yaml_text

SG = "sglang /server_info internal_states[].avg_spec_accept_length (1 rank(s))"


def m(length, source=SG, problem=None):
    return {"acceptance-length": length, "source": source, **({"problem": problem} if problem else {})}


# (synthetic, acceptance.json, tolerance) -> (measured, difference, agrees, warns)
CASES = {
    "equal": (3.51, m(3.51), 0.10, (3.51, 0.0, True, False)),
    "within, below": (3.51, m(3.3), 0.10, (3.3, -0.0598, True, False)),
    "within, above": (3.0, m(3.2), 0.10, (3.2, 0.0667, True, False)),
    "exactly at the tolerance agrees": (2.5, m(2.75), 0.10, (2.75, 0.1, True, False)),
    "below by more than the tolerance warns": (3.51, m(3.0), 0.10, (3.0, -0.1453, False, True)),
    "above by more than the tolerance warns": (2.0, m(2.5), 0.10, (2.5, 0.25, False, True)),
    "a wider tolerance accepts it": (3.51, m(3.0), 0.20, (3.0, -0.1453, True, False)),
    "a tighter tolerance refuses a small gap": (3.51, m(3.4), 0.02, (3.4, -0.0313, False, True)),
    "vLLM's counters are a measurement as well": (3.0, m(2.0, "vllm /metrics 1 + d(a) / d(d)"), 0.10,
                                                  (2.0, -0.3333, False, True)),
    "measured but no synthetic (real speculation everywhere): recorded, nothing to check": (
        None, m(3.1), 0.10, (3.1, None, None, False)),
    "engine reported none: not measured, with its reason, no warning": (
        3.51, {"acceptance-length": None, "source": "sglang", "problem": "no avg_spec_accept_length"}, 0.10,
        (None, None, None, False)),
    "no acceptance.json: not measured": (3.51, None, 0.10, (None, None, None, False)),
    "a non-finite or non-positive length is no measurement": (3.51, m(float("nan")), 0.10, (None, None, None, False)),
    "a boolean is no length": (3.51, m(True), 0.10, (None, None, None, False)),
}


@pytest.mark.parametrize("synthetic, measured, tolerance, expected", CASES.values(), ids=CASES.keys())
def test_compare(synthetic, measured, tolerance, expected):
    got = compare(synthetic, measured, tolerance)
    assert (got["measured"], got["difference"], got["agrees"], got["warning"] is not None) == expected
    assert got["synthetic"] == synthetic and got["tolerance"] == tolerance
    assert got["measured-source"] == (measured["source"] if expected[0] is not None else None)
    assert ("not-measured" in got) == (expected[0] is None)


def test_a_point_without_speculation_has_no_record():
    assert compare(None, None, 0.1) is None


def test_the_warning_says_both_lengths_the_direction_and_what_to_do():
    w = compare(3.51, m(3.0), 0.10)["warning"]
    assert w.startswith(f"measured acceptance length 3 ({SG}) is 14.5% below the synthetic 3.51 the throughput "
                        "rows replay (tolerance 10%)")
    assert "config acceptance-update" in w


def test_not_measured_names_the_engine_s_reason():
    got = compare(3.51, {"acceptance-length": None, "source": "sglang", "problem": "is --enable-metrics on?"}, 0.1)
    assert got["not-measured"] == "is --enable-metrics on?"
    assert compare(3.51, None, 0.1)["not-measured"] == "the job wrote no acceptance.json"


@pytest.mark.parametrize("section, tolerance", [
    ({"tolerance": 0.25}, 0.25), ({}, DEFAULT_TOLERANCE), (None, DEFAULT_TOLERANCE), ({"tolerance": 1}, 1.0)])
def test_tolerance_of(section, tolerance):
    assert tolerance_of(section) == tolerance


@pytest.mark.parametrize("text, message", [
    ("acceptance:\n  tolerance: 0.1\n", None),
    ("acceptance:\n  tolerance: 0\n", "tolerance"),
    ("acceptance:\n  tolerance: 1.5\n", "tolerance"),
    ("acceptance:\n  tolerance: ten\n", "tolerance"),
    ("acceptance:\n  tolerence: 0.1\n", "tolerance"),     # did you mean
])
def test_the_policy_section_is_schema_checked(text, message):
    doc = load_yaml_text("policy-version: 1\nrepository: o/r\nlabels: {primary: {}}\n" + text, "ci-policy.yaml")
    found = section_findings(doc)
    if message is None:
        assert found == []
    else:
        assert found and message in (found[0].message + found[0].hint) and found[0].line == 5


def test_the_shipped_policy_sets_the_issue_s_tolerance():
    from pathlib import Path

    from ci_tools.evals.load import load_acceptance_tolerance

    assert load_acceptance_tolerance(Path(__file__).resolve().parents[2] / "inferencex-e2e" / "ci-policy.yaml") == 0.10


@pytest.mark.parametrize("section, words", [
    ("acceptance:\n  tolerance: 0\n", "tolerance"),
    ("acceptance:\n  tolerance: '0.1'\n", "tolerance"),
    ("acceptance:\n  margin: 0.1\n", "margin"),
    ("acceptance: 0.1\n", "acceptance"),
])
def test_config_validate_checks_the_acceptance_section(tmp_path, section, words):
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    for part in ("inferencex-e2e", "recipes"):
        shutil.copytree(repo / part, tmp_path / part)
    policy = tmp_path / "inferencex-e2e/ci-policy.yaml"
    text = policy.read_text()
    assert "acceptance:\n  tolerance: 0.10\n" in text
    policy.write_text(text.replace("acceptance:\n  tolerance: 0.10\n", section))
    res = subprocess.run([sys.executable, "-m", "ci_tools", "config", "validate", "--root", str(tmp_path),
                          "--format", "json"], capture_output=True, text=True, timeout=120)
    found = [f for f in json.loads(res.stdout)["errors"] if f["file"].endswith("ci-policy.yaml")]
    assert res.returncode == 1 and found and any(words in f["message"] for f in found), res.stdout
    assert all(f["line"] for f in found) and "Traceback" not in res.stderr
