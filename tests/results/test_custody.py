"""The chain of custody of the client's exports, as plain data: the record's format (custody/record.py),
what counts as a change, and the verdict over the evidence `results process` gathers (results/custody.py)."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from ci_tools.custody.record import merged, parse_record, record_text, sha256_hex
from ci_tools.results import custody
from ci_tools.results.custody import Change, Evidence, changes, judge

A, B, C = "a" * 64, "b" * 64, "c" * 64


def test_the_record_is_what_sha256sum_checks(tmp_path):
    """The record is sha256sum's own format: `sha256sum -c` run in the job directory checks it, also for a
    name with a backslash or a newline (GNU coreutils' escaping)."""
    names = ["aiperf_artifacts/profile_export.jsonl", "aiperf_artifacts/odd\\name", "aiperf_artifacts/two\nlines"]
    entries = {}
    for i, name in enumerate(names):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"content {i}".encode())
        entries[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    text = record_text(entries)
    (tmp_path / "record").write_text(text)
    res = subprocess.run(["sha256sum", "--strict", "-c", "record"], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert parse_record(text) == entries
    (tmp_path / names[0]).write_bytes(b"edited")
    assert subprocess.run(["sha256sum", "-c", "record"], cwd=tmp_path, capture_output=True).returncode == 1


@pytest.mark.parametrize("text,problem", [
    ("xyz  a\n", "line 1 is not"),
    (f"{A}  a\n{A[:-1]}  b\n", "line 2 is not"),
    (f"{A}  a\n{B}  a\n", "line 2 names a a second time"),
    (f"{A.upper()}  a\n", "line 1 is not"),
])
def test_a_malformed_record_names_its_line(text, problem):
    with pytest.raises(ValueError, match=problem):
        parse_record(text)


def test_a_later_client_keeps_the_earlier_clients_entries():
    before = {"conc4/aiperf_artifacts/x": A, "conc8/aiperf_artifacts/x": B, "conc8/aiperf_artifacts/old": C}
    assert merged(before, ["conc8/aiperf_artifacts"], {"conc8/aiperf_artifacts/x": C}) == \
        {"conc4/aiperf_artifacts/x": A, "conc8/aiperf_artifacts/x": C}


REC = {"aiperf_artifacts/profile_export.jsonl": A, "aiperf_artifacts/profile_export_aiperf.json": B,
       "aiperf_artifacts/inputs.json": C}
READ = ("aiperf_artifacts/profile_export.jsonl", "aiperf_artifacts/profile_export_aiperf.json")


@pytest.mark.parametrize("found,read,expect", [
    ("same", READ, []),
    # the job artifact leaves inputs.json out (names.UPLOAD_EXCLUDE): gone by design, not an edit
    ({k: v for k, v in REC.items() if k != "aiperf_artifacts/inputs.json"}, READ, []),
    ({**REC, "aiperf_artifacts/profile_export.jsonl": C}, READ,
     [Change("aiperf_artifacts/profile_export.jsonl", A, C)]),
    ({k: v for k, v in REC.items() if k != "aiperf_artifacts/profile_export_aiperf.json"}, READ[:1],
     [Change("aiperf_artifacts/profile_export_aiperf.json", B, None)]),
    ({**REC, "aiperf_artifacts/run_2/profile_export.jsonl": A}, READ,
     [Change("aiperf_artifacts/run_2/profile_export.jsonl", None, A)]),
    # what results process read must be recorded, wherever it lies (a file dropped beside the folder)
    ({**REC, "profile_export.jsonl": A}, ("profile_export.jsonl",), [Change("profile_export.jsonl", None, A)]),
])
def test_what_counts_as_a_change(found, read, expect):
    assert changes(REC, REC if found == "same" else found, read) == expect


def test_a_multinode_result_is_judged_by_its_own_folder():
    rec = {"conc4/aiperf_artifacts/p": A, "conc8/aiperf_artifacts/p": B}
    found = {"conc4/aiperf_artifacts/p": C, "conc8/aiperf_artifacts/p": B}
    assert changes(rec, found, (), scope="conc8") == []
    assert changes(rec, found, (), scope="conc4") == [Change("conc4/aiperf_artifacts/p", A, C)]


def _ev(**kw) -> Evidence:
    base = dict(record=record_text(REC), expected=None, promised=True, found=dict(REC), read=READ)
    return Evidence(**{**base, **kw})


DIGEST = sha256_hex(record_text(REC).encode())


@pytest.mark.parametrize("ev,valid,words", [
    (_ev(), True, None),
    (_ev(expected=DIGEST), True, None),
    (_ev(expected=A), False, f"is sha256 {DIGEST}, but the run step recorded {A}"),
    (_ev(expected=""), False, "the run step recorded nothing"),
    (_ev(record=None, expected=DIGEST), False, "the record of the client's exports was removed"),
    (_ev(record=None), False, "has lost it or was assembled by hand"),
    (_ev(record=None, promised=False), True, None),      # an older runner's job directory: noted, not refused
    (_ev(record="not a record\n"), False, "line 1 is not"),
    (_ev(found={**REC, "aiperf_artifacts/profile_export.jsonl": C}), False,
     f"aiperf_artifacts/profile_export.jsonl changed after the client exited: sha256 {A} then, {C} now"),
])
def test_the_verdict(ev, valid, words):
    failures, section = judge(ev)
    assert (not failures) is valid
    assert all(f.rule == "export-custody" for f in failures)
    if words:
        assert words in failures[0].message
    assert section["record"] == "client_exports.sha256"
    if ev.record is None and ev.expected is None and not ev.promised:
        assert section["checked"] is False and "not checked" in section["note"]
    if valid and ev.record is not None:
        assert section["checked"] is True and section["files"] == 3 and section["anchored"] is (ev.expected is not None)


def test_many_changes_are_counted_not_all_named():
    rec = {f"aiperf_artifacts/f{i:03}": A for i in range(50)}
    failures, section = judge(Evidence(record_text(rec), None, True, {k: B for k in rec}, ()))
    assert len(failures) == custody.MAX_SHOWN + 1 and section["changed"] == 50
    assert failures[-1].message == "and 30 more file(s) differ from client_exports.sha256"
