"""The real InferenceX configs (../shared/corpus/inferencex): 208 entries, 37 runner labels.

Every entry must pass the schemas and cross-field rules. Across files, the corpus has exactly one
kind of real inconsistency that blocks: 8 entries use 3 runner labels that runners.yaml does not
declare (spec §1.11 / §7.11). Those are errors. Two things are warnings: images are not digest-pinned
(202 of 208 entries; no entry is touched by a change here, so one grouped warning per file), and
dsr1-fp4-mi355x-sglang-disagg-8k1k-mtp lists concurrency 32 of its 1P2D TP8 topology in two
search-space entries, so that point is benchmarked twice. Nothing else is reported.
"""

from __future__ import annotations

import json
from pathlib import Path

from clirun import run

from ci_tools.config.load import validate_files
from tests.conftest import assert_golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "config"
ARGS = ["config", "validate", "--master", "configs/nvidia-master.yaml", "--master", "configs/amd-master.yaml",
        "--runners", "configs/runners.yaml"]

UNDECLARED = {  # (file, line) -> label, lines as listed in spec §1.11
    ("configs/nvidia-master.yaml", 1668): "h200-dgxc",
    ("configs/nvidia-master.yaml", 1687): "h200-dgxc",
    ("configs/nvidia-master.yaml", 3308): "gb300-nv",
    ("configs/nvidia-master.yaml", 5186): "gb300-nv",
    ("configs/nvidia-master.yaml", 5469): "gb300-nv",
    ("configs/nvidia-master.yaml", 5668): "gb300-nv",
    ("configs/amd-master.yaml", 1629): "cluster:mi325x-tw",
    ("configs/amd-master.yaml", 1651): "cluster:mi325x-tw",
}


def _corpus(shared: Path) -> Path:
    return shared / "corpus" / "inferencex"


def test_all_208_entries_and_the_runners_file_pass_schema_and_rules(shared):
    cfg = _corpus(shared) / "configs"
    report = validate_files([cfg / "nvidia-master.yaml", cfg / "amd-master.yaml"], cfg / "runners.yaml")
    assert report.counts["entries"] == 208
    assert report.counts["valid_entries"] == 208
    assert report.counts["runners_files"] == 1
    # Only cross-file findings remain: no schema or rule message about any entry's own fields.
    kinds = {next((k for k in ("runner label", "without a @sha256 digest", "benchmarked twice") if k in f.message), None)
             for f in report.findings}
    assert kinds == {"runner label", "without a @sha256 digest", "benchmarked twice"}, \
        [f.as_text() for f in report.findings]


def test_corpus_findings_are_exactly_the_real_inconsistencies(shared):
    res = run([*ARGS, "--format", "json"], cwd=_corpus(shared))
    assert res.code == 1, res.err
    body = json.loads(res.out)
    assert body["ok"] is False
    got = {(e["file"], e["line"]): e["message"] for e in body["errors"]}
    assert set(got) == set(UNDECLARED)
    for where, label in UNDECLARED.items():
        assert f"runner label '{label}' is not declared in configs/runners.yaml" in got[where]
    assert [(w["file"], w["line"]) for w in body["warnings"]] == [
        ("configs/amd-master.yaml", 2), ("configs/amd-master.yaml", 856), ("configs/nvidia-master.yaml", 2)]
    assert body["warnings"][0]["message"].startswith("56 entries in this file use an image without a @sha256 digest")
    assert body["warnings"][2]["message"].startswith("146 entries in this file use an image without a @sha256 digest")
    assert body["warnings"][1]["message"].startswith("dsr1-fp4-mi355x-sglang-disagg-8k1k-mtp: concurrency 32 with this")
    assert body["warnings"][1]["message"].endswith(
        "is already listed in another search-space entry, so the same point would be benchmarked twice (see line 837)")
    assert body["counts"]["entries"] == 208
    assert body["notes"] == ["recipes not checked: no repository root (pass --root DIR to check recipe references)"]


def test_a_touched_unpinned_corpus_entry_is_an_error(shared):
    res = run([*ARGS, "--changed-key", "dsv4-fp4-b200-sglang", "--format", "json"], cwd=_corpus(shared))
    body = json.loads(res.out)
    pins = [e for e in body["errors"] if "not pinned by digest" in e["message"]]
    assert len(pins) == 1 and pins[0]["message"].startswith("image of dsv4-fp4-b200-sglang (touched by this change)")
    assert any(w["message"].startswith("145 entries") for w in body["warnings"])


def _golden(name: str, text: str) -> None:
    assert_golden(GOLDEN / name, text)


def test_corpus_text_output_golden(shared):
    res = run(ARGS, cwd=_corpus(shared))
    assert res.code == 1
    _golden("corpus.txt", res.out)


def test_corpus_github_annotations_golden(shared):
    res = run([*ARGS, "--format", "github"], cwd=_corpus(shared))
    assert res.code == 1
    _golden("corpus.github.txt", res.out)
    assert res.out.count("::error file=configs/") == 8
