"""`ci-tools plan` over every transition of InferenceX's real main history (218 versions, 217 changes).

For each transition base -> head the real command plans the change (in-process, from git objects), and
three oracles judge it:
  * the changelog gate (`lint_change`): plan refuses exactly the changes the gate rejects, with the
    gate's first message; on every accepted change, plan's entries are the appended ones, found
    independently (head extends base byte for byte; PyYAML parses the appended bytes), so "nothing
    was appended" can never hide an appended entry;
  * the two master readers: the per-entry fast reader and the whole-file reader give the same keys
    and the same selected entries (data and line marks) at every version;
  * `ci-tools matrix test-config` over the appended config keys (run on the head files written to
    disk): plan's rows are exactly its rows, benchmark and eval.

Heavy tier (`-m heavy` / `-m "not heavy"`): about a minute on 2 cores; `.ci/run` runs it.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from ci_tools.changelog.lint import lint_change
from ci_tools.changelog.parse import entry_starts
from ci_tools.cli import main
from ci_tools.config.masters import MasterIndex
from ci_tools.gitio import Git
from tests.conftest import shared_dir

pytestmark = pytest.mark.heavy

LOG = "perf-changelog.yaml"
MASTERS = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"]
RUNNERS = "configs/runners.yaml"
# full scope, no canary, no trimming: every row of the change lands in a bucket, as matrix prints it
LABEL = "full-sweep-fail-fast-no-canary"
PLAN_ONLY_KEYS = ("recipe-fingerprint", "config-key", "priority", "queue-token", "skip-queue-pr")


@dataclass
class Transition:
    n: int
    base: str
    head: str
    subject: str
    code: int = 0
    plan: dict | None = None
    stderr: str = ""
    gate_errors: list = field(default_factory=list)
    appended: list = field(default_factory=list)  # the oracle's appended entries (accepted changes)
    base_count: int = 0
    head_count: int = 0


def _plan(repo: Path, base: str, head: str) -> tuple[int, dict | None, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        main(["plan", "--repo", str(repo), "--base", base, "--head", head, "--label", LABEL, "--format", "json",
              "--changelog-file", LOG, *[a for m in MASTERS for a in ("--master", m)], "--runners", RUNNERS,
              # InferenceX's rows are served by its own launch scripts (no recipes): plan what it would
              "--no-runner-screen"])
    text = out.getvalue()
    return exc.value.code, json.loads(text) if text.strip() else None, err.getvalue()


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    shared = shared_dir()
    if not (shared / "corpus").is_dir():
        pytest.fail(f"the shared corpus is missing: expected {shared}/corpus (set CI_TOOLS_SHARED to its folder)")
    bundle = shared / "corpus" / "inferencex-history" / "perf-changelog-history.bundle"
    repo = tmp_path_factory.mktemp("ix-history") / "repo"
    subprocess.run(["git", "clone", "-q", str(bundle), str(repo)], check=True, capture_output=True)
    log = subprocess.run(["git", "-C", str(repo), "log", "--reverse", "--format=%H %s"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert len(log) == 218
    git = Git(repo)
    out = []
    for n, ((base, _), (head, subject)) in enumerate(zip((l.split(" ", 1) for l in log),
                                                        (l.split(" ", 1) for l in log[1:])), 1):
        t = Transition(n, base, head, subject)
        b, h = git.show(base, LOG), git.show(head, LOG)
        t.base_count, t.head_count = len(entry_starts(b)), len(entry_starts(h))
        t.gate_errors = lint_change(b, h, file=LOG, mode=None, master_keys=None).errors
        if not t.gate_errors and h.startswith(b):
            t.appended = yaml.load(h[len(b):], Loader=yaml.CSafeLoader) or []
        t.code, t.plan, t.stderr = _plan(repo, base, head)
        out.append(t)
    return repo, git, out


def _accepted(transitions):
    return [t for t in transitions if not t.gate_errors]


def test_plan_refuses_exactly_what_the_gate_rejects(history):
    _, _, transitions = history
    for t in transitions:
        if t.gate_errors:
            first = t.gate_errors[0]
            assert t.code == 1 and t.plan["sweep"] is False, (t.subject, t.stderr)
            found = [(f["file"], f["line"], f["message"]) for f in t.plan["findings"]]
            assert (first.file, first.line, first.message) in found, (t.subject, found)
            assert "no sweep planned: the changelog change breaks the append-only rules" in found[-1][2]
        else:
            assert "append-only rules" not in json.dumps(t.plan["findings"]), (t.subject, t.plan["findings"])
    # the bundle holds every kind of break: inserts, edits, deletions, layout
    assert sum(bool(t.gate_errors) for t in transitions) >= 60


def test_every_accepted_change_plans_exactly_its_appended_entries(history):
    _, _, transitions = history
    accepted = _accepted(transitions)
    assert len(accepted) >= 100
    for t in accepted:
        assert t.head_count - t.base_count == len(t.appended), t.subject
        if t.plan["findings"]:
            # refused for another reason: an invalid selected config (located, below), never silence
            assert t.code == 1 and "no sweep planned" in t.plan["reason"], (t.subject, t.plan["reason"])
            continue
        assert t.code == 0, (t.subject, t.stderr)
        got = [e["config-keys"] for e in t.plan["entries"]]
        assert got == [e["config-keys"] for e in t.appended], t.subject
        if t.appended:
            assert t.plan["sweep"] and t.plan["points"], (t.subject, t.plan["reason"])
        else:
            assert not t.plan["sweep"] and "appends no entry" in t.plan["reason"], t.subject
    # "appends no entry" only ever where the entry count did not grow
    for t in transitions:
        if "appends no entry" in t.plan["reason"]:
            assert t.head_count <= t.base_count, t.subject


def test_refusals_for_invalid_selected_configs_are_located(history):
    _, _, transitions = history
    refused = [t for t in _accepted(transitions) if t.code == 1]
    assert refused, "the bundle has changes that select invalid configs"
    for t in refused:
        findings = t.plan["findings"]
        assert findings[-1]["message"].endswith("error(s) in the master config(s) this change selects"), t.subject
        located = findings[:-1]
        assert located and all(f["file"] in MASTERS + [RUNNERS] and isinstance(f["line"], int)
                               for f in located), (t.subject, findings)
        assert "Error:" not in t.stderr and "internal error" not in t.stderr


def _selected_keys(t: Transition) -> list[str]:
    return list(dict.fromkeys(k for e in (t.plan or {}).get("entries", []) for k in e["resolved"]))


def test_fast_and_full_master_readers_agree_at_every_version(history):
    _, git, transitions = history
    # the whole-file reader once per distinct version of a file (210 in 434 places): a file unchanged by a
    # transition keeps its last reading. Only the last is kept: holding 210 readings (their line marks)
    # doubled the test's time in the collector's passes over them.
    last_full: dict[str, tuple[bytes, MasterIndex]] = {}
    for t in transitions:
        blobs = git.show_many(t.head, MASTERS)
        fast = MasterIndex([(m, blobs[m]) for m in MASTERS])
        assert fast.split_files == MASTERS, t.subject  # comment-only `*`/`&` no longer force the slow path
        keys = _selected_keys(t) or fast.keys[-3:]  # refused or empty changes: still compare some entries
        a = fast.select(keys)
        assert list(a.entries) == [k for k in fast.keys if k in set(keys)], t.subject
        full_keys = []
        for m in MASTERS:
            if m not in last_full or last_full[m][0] != blobs[m]:
                last_full[m] = (blobs[m], MasterIndex([(m, blobs[m])], fast=False))
            full = last_full[m][1]
            full_keys += full.keys
            b = full.select(keys)
            for k in b.entries:
                assert a.entries[k] == b.entries[k], (t.subject, k)
                assert a.origin[k].file == b.origin[k].file == m
                assert a.origin[k].mark((k,)) == b.origin[k].mark((k,)), (t.subject, k)
                assert a.origin[k].mark((k, "runner")) == b.origin[k].mark((k, "runner")), (t.subject, k)
        assert fast.keys == full_keys, t.subject


def _strip(row: dict) -> str:
    return json.dumps({k: v for k, v in row.items() if k not in PLAN_ONLY_KEYS}, sort_keys=True)


def _matrix(args: list[str]) -> list[dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exc:
        main(["matrix", "test-config", "--format", "json", *args])
    assert exc.value.code == 0
    return json.loads(out.getvalue())


def test_plan_rows_equal_matrix_test_config_over_the_appended_keys(history, tmp_path):
    _, git, transitions = history
    compared = 0
    for t in _accepted(transitions):
        if t.plan is None or not t.plan["sweep"]:
            continue
        assert not any(e.get("append-only") for e in t.appended), "append-only deltas have their own tests"
        blobs = git.show_many(t.head, MASTERS + [RUNNERS])
        for name, data in blobs.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes(data)
        files = [a for m in MASTERS for a in ("--config-file", str(tmp_path / m))]
        files += ["--runners", str(tmp_path / RUNNERS)]
        want: dict[str, None] = {}
        for e in t.appended:
            keys = [a for k in e["config-keys"] for a in ("--config-key", k)]
            scen = [a for s in e.get("scenario-type") or [] for a in ("--scenario-type", s)]
            if not (e.get("evals-only") or e.get("all-evals")):
                want.update(dict.fromkeys(_strip(r) for r in _matrix(keys + scen + files + ["--no-evals"])))
            evals = _matrix(keys + scen + files + ["--evals-only"] + (["--all-evals"] if e.get("all-evals") else []))
            want.update(dict.fromkeys(_strip(r) for r in evals))
        got = [_strip(r) for rows in t.plan["buckets"].values() for r in rows]
        assert sorted(got) == sorted(want), t.subject
        assert t.plan["totals"]["jobs"] == len(got), t.subject
        compared += 1
    assert compared >= 100
