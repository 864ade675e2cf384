"""`ci-tools plan` never plans nothing silently and never plans from bad input (issue 10).

Each test edits a clone of the demo repository (real git, the real CLI entry point) into one shape:
comments the fast master reader declines, an entry inserted mid-file, an invalid selected config,
an unrelated invalid config, a repository without a policy file.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ci_tools.cli import main

MASTER = "inferencex-e2e/configs/nvidia-master.yaml"
LOG = "inferencex-e2e/perf-changelog.yaml"
POLICY = "inferencex-e2e/ci-policy.yaml"
KEY = "dsv41flash-fp4-gb300-sglang-agentic-dspark"


@pytest.fixture
def repo(demo_repo, tmp_path, monkeypatch):
    for var in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_NAME", "GITHUB_RUN_ID"):
        monkeypatch.delenv(var, raising=False)
    dest = tmp_path / "r"
    subprocess.run(["git", "clone", "-q", "--branch", "main", str(demo_repo), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "fetch", "-q", "--tags"], check=True)
    for k, v in (("user.email", "a@b.invalid"), ("user.name", "a")):
        subprocess.run(["git", "-C", str(dest), "config", k, v], check=True)
    return dest


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def commit(repo: Path, message: str = "change") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def plan(capsys, repo: Path, base: str = "base", head: str = "HEAD"):
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--repo", str(repo), "--base", base, "--head", head, "--label", "full-sweep-fail-fast",
              "--format", "json"])
    out, err = capsys.readouterr()
    return exc.value.code, (json.loads(out) if out.strip() else None), err


def messages(doc: dict) -> str:
    return "\n".join(f["message"] for f in doc["findings"])


def edit(repo: Path, path: str, old: str, new: str) -> None:
    f = repo / path
    text = f.read_text()
    assert old in text, old
    f.write_text(text.replace(old, new, 1))


def test_comments_that_decline_the_fast_reader_still_plan_the_entry(capsys, repo):
    code, before, err = plan(capsys, repo, head="head")
    assert code == 0 and before["sweep"], err
    git(repo, "reset", "-q", "--hard", "base")
    # the real amd-master.yaml comment, a trailing comment with an alias-like `*x`, anchors, merge keys, quotes
    edit(repo, MASTER, f"{KEY}:\n", f"# rocm/sgl-dev:*-DSv4 &anchor <<: *merge 'quoted' \"double\"\n{KEY}:   # *x &y\n")
    commit(repo, "comments")
    git(repo, "checkout", "-q", "head", "--", LOG)
    commit(repo, "the seed entry")
    code, after, err = plan(capsys, repo, base="base")
    assert code == 0, err
    assert after["sweep"] and [e["resolved"] for e in after["entries"]] == [[KEY]]
    assert after["points"] == before["points"] and after["buckets"] == before["buckets"]


def test_an_entry_inserted_mid_file_is_refused_not_planned_from_the_last_entries(capsys, repo):
    git(repo, "checkout", "-q", "head")
    log = (repo / LOG).read_text()
    first = log.index("\n- config-keys:") + 1
    second = log.index("\n- config-keys:", first) + 1
    inserted = f"- config-keys:\n    - {KEY}\n  description:\n    - \"inserted\"\n  pr-link: XXX\n\n"
    (repo / LOG).write_text(log[:second] + inserted + log[second:])
    commit(repo, "insert")
    code, result, err = plan(capsys, repo, base="head")
    assert code == 1 and result["sweep"] is False
    said = messages(result)
    assert "a new entry was inserted at line" in said and all(f["file"] == LOG for f in result["findings"])
    assert "no sweep planned: the changelog change breaks the append-only rules" in said


def test_a_deleted_entry_is_refused(capsys, repo):
    git(repo, "checkout", "-q", "head")
    log = (repo / LOG).read_text()
    first = log.index("\n- config-keys:") + 1
    second = log.index("\n- config-keys:", first) + 1
    (repo / LOG).write_text(log[:first] + log[second:])
    commit(repo, "delete")
    code, result, err = plan(capsys, repo, base="head")
    assert code == 1 and "historical entry was deleted" in messages(result) and "no sweep planned" in messages(result)


def test_an_invalid_selected_config_is_refused_with_located_findings(capsys, repo):
    git(repo, "checkout", "-q", "head")
    edit(repo, MASTER, "      - { tp: 4, ep: 4, kv-offloading: none, spec-decoding: mtp, conc-list: [1] }",
         "      - { tp: 4, ep: 4, kv-offloading: none, kv-offload-backend: hicache, spec-decoding: mtp, "
         "conc-list: [1] }")
    commit(repo, "break the selected config")
    code, result, err = plan(capsys, repo, base="base")
    line = next(i for i, text in enumerate((repo / MASTER).read_text().splitlines(), 1) if "kv-offload-backend: hicache" in text)
    assert code == 1 and result["sweep"] is False
    assert [f["line"] for f in result["findings"] if f["file"] == MASTER and f["line"]] == [line]
    assert "'kv-offload-backend' must be a mapping" in messages(result)
    assert "no sweep planned: 1 error(s) in the master config(s) this change selects" in messages(result)
    assert "AttributeError" not in err and "internal error" not in err


def test_a_cross_field_rule_of_the_selected_config_is_refused(capsys, repo):
    git(repo, "checkout", "-q", "head")
    edit(repo, MASTER, "  runner: cluster:gb300-nv\n  precision: fp4\n  framework: sglang\n  multinode: false\n  recipe:",
         "  runner: cluster:gb300-nvv\n  precision: fp4\n  framework: sglang\n  multinode: false\n  recipe:")
    commit(repo, "undeclared runner label")
    code, result, err = plan(capsys, repo, base="base")
    line = (repo / MASTER).read_text().splitlines().index("  runner: cluster:gb300-nvv") + 1
    assert code == 1 and "runner label 'cluster:gb300-nvv' is not declared" in messages(result)
    assert (MASTER, line, 3) in [(f["file"], f["line"], f["col"]) for f in result["findings"]]


def test_an_unrelated_invalid_config_does_not_block_the_plan(capsys, repo):
    git(repo, "checkout", "-q", "head")
    edit(repo, MASTER, "  runner: b300\n", "  runner: b300\n  unknown-field: 1\n")
    edit(repo, MASTER, "  kv-p2p-transfer: nixl\n", "")  # disagg: true without kv-p2p-transfer
    commit(repo, "break two other configs")
    code, result, err = plan(capsys, repo, base="base")
    assert code == 0, err
    assert result["sweep"] and [e["resolved"] for e in result["entries"]] == [[KEY]]


def test_policy_is_read_at_head_not_from_the_working_tree(capsys, repo):
    git(repo, "checkout", "-q", "head")
    (repo / POLICY).unlink()  # the working tree no longer has it; the head commit does
    code, result, err = plan(capsys, repo, base="base")
    assert code == 0 and "note:" not in err
    assert result["policy"]["file"] == POLICY and result["policy"]["default"] is False
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert result["policy"]["ref"] == sha


def test_a_repository_without_a_policy_file_gets_the_default_with_a_note(capsys, repo):
    git(repo, "checkout", "-q", "head")
    git(repo, "rm", "-q", POLICY)
    commit(repo, "no policy")
    code, result, err = plan(capsys, repo, base="base")
    assert code == 0, err
    assert f"note: no {POLICY} at HEAD" in err and "ci-tools' default policy" in err
    assert result["sweep"] and result["policy"]["default"] is True and result["policy"]["file"] is None
    # the default knows the same labels: an unknown one is ignored with a note naming them
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--repo", str(repo), "--base", "base", "--head", "HEAD", "--label", "full-sweep"])
    err = capsys.readouterr().err
    assert exc.value.code == 0 and "label(s) full-sweep" in err and "full-sweep-fail-fast" in err


def test_gate_only_without_a_policy_file_uses_the_default_with_a_note(capsys, tmp_path, shared):
    payload = json.loads((shared / "corpus/github-webhooks/pull_request/synchronize.payload.json").read_text())
    payload["pull_request"]["labels"] = [{"name": "full-sweep-fail-fast"}]
    ev = tmp_path / "ev.json"
    ev.write_text(json.dumps(payload))
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--repo", str(tmp_path), "--event-path", str(ev), "--gate-only", "--format", "json",
              "--head-message", "x"])
    out, err = capsys.readouterr()
    assert exc.value.code == 0 and json.loads(out)["sweep"] and "note: no inferencex-e2e/ci-policy.yaml" in err


def test_a_refused_change_is_one_json_document_and_a_github_summary_with_every_finding(capsys, repo, tmp_path,
                                                                                       monkeypatch):
    """Issue 24: with a broken changelog, `--format json` printed 0 bytes and `--format github` wrote no
    outputs, no summary and no annotations; and a history edit hid a typo'd key in the new entry (two
    round trips). Now every format says the verdict and every finding, at once."""
    git(repo, "checkout", "-q", "head")
    log = (repo / LOG).read_text()
    first = log.index("description:")
    edited = log[:first] + "description:\n    - \"history, edited\"\n" + log[first:].split("\n", 2)[2]
    typo = edited.rsplit(f"    - {KEY}", 1)
    (repo / LOG).write_text(typo[0] + f"    - {KEY}x" + typo[1])
    commit(repo, "edit history and typo a key")
    code, doc, err = plan(capsys, repo, base="base")
    assert code == 1 and doc["sweep"] is False and doc["error"]
    said = messages(doc)
    assert "historical entries are immutable" in said and f"config key '{KEY}x' is not in the master configs" in said
    assert "did you mean" in said
    assert {"file", "line", "col", "message", "hint", "severity"} <= set(doc["findings"][0])

    out, summary = tmp_path / "out", tmp_path / "summary"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--repo", str(repo), "--base", "base", "--head", "HEAD", "--label", "full-sweep-fail-fast",
              "--format", "github"])
    stdout, stderr = capsys.readouterr()
    assert exc.value.code == 1
    outputs = out.read_text()
    assert "\nsweep=false\n" in outputs and "\nerror=no sweep planned" in outputs and outputs.startswith("check=true\n")
    annotations = [line for line in stdout.splitlines() if line.startswith("::error ")]
    assert len(annotations) == len(doc["findings"]) and all("title=plan" in a for a in annotations)
    assert any(f"file={LOG},line=" in a and "immutable" in a for a in annotations)
    md = summary.read_text()
    assert "Sweep plan" in md and "immutable" in md and f"{KEY}x" in md
    assert "immutable" in stderr and f"{KEY}x" in stderr                   # the log says it too
