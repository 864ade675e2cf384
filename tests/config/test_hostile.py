"""`config validate` on hostile masters (issue 15, item 9): a clean located refusal, never a traceback or a
hang, and a cost per entry that stays bounded however many invalid entries a file holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tools import errors
from ci_tools.config import load, validate

from clirun import run


def bomb(levels: int) -> str:
    lines = ["x0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text,fragment", [
    (bomb(7), "aliases expand"),
    ("cfg: &r [*r]\n", "recursive alias"),
    ("cfg: " + "[" * 330 + "]" * 330 + "\n", "nested more than"),
    ("cfg:\n  image: 0x_\n", "cannot read the value '0x_'"),
    ("cfg: !!set {a, b}\n", "!!set is not supported"),
    ("cfg:\n  scenarios: !!omap [{a: 1}]\n", "!!omap is not supported"),
])
def test_hostile_master_is_refused_cleanly(tmp_path: Path, text, fragment):
    master = tmp_path / "m-master.yaml"
    master.write_text(text)
    res = run(["config", "validate", "--master", str(master)])
    assert res.code == 1, res.err + res.out
    assert fragment in res.out + res.err
    assert "Traceback" not in res.err and "internal error" not in res.err


def test_many_invalid_entries_stop_after_a_bound(tmp_path: Path):
    """40,000 entries of `{}` cost 34 s and 1.2 GB (8 findings each); checking stops after
    MAX_INVALID_ENTRIES invalid entries and says how many were not checked."""
    master = tmp_path / "m-master.yaml"
    master.write_text("".join(f"cfg-{i:05d}: {{}}\n" for i in range(40_000)))
    src = load.load_sources(None, [master])
    report = validate.check(src)
    limit = validate.MAX_INVALID_ENTRIES
    assert f"stopped after {limit} invalid entries: {40_000 - limit} more entries not checked" in report.notes
    # 8 missing fields for each checked entry and the stop, of which the file shows the first screen
    assert report.errors[-1].omitted == limit * 8 + 1 - errors.MAX_FINDINGS_PER_FILE
    assert report.counts["entries"] == 40_000


# ---- issue 25, 8: findings capped per file --------------------------------------------------------------

def flow_mapping(keys: int) -> str:
    """One entry written as a flow mapping of unknown fields (the pass's 10 MB one had 700,000)."""
    return "cfg: {" + ", ".join(f"key{i:07d}: 1" for i in range(keys)) + "}\n"


def test_a_files_findings_are_capped_and_the_rest_counted(tmp_path: Path):
    """A mapping of 5,000 unknown fields is 5,008 findings (8 missing fields); the file shows the first
    MAX_FINDINGS_PER_FILE, then one finding counts the rest, and the verdict is still an error."""
    master = tmp_path / "m-master.yaml"
    master.write_text(flow_mapping(5_000))
    report = validate.check(load.load_sources(None, [master]))
    cap = errors.MAX_FINDINGS_PER_FILE
    mine = [f for f in report.findings if f.file == str(master)]
    assert len(mine) == cap + 1
    assert mine[-1].message == f"… and {5_008 - cap} more findings in this file"
    assert mine[-1].omitted == 5_008 - cap and mine[-1].severity == "error"
    assert all(not f.omitted for f in mine[:-1]) and not report.ok


@pytest.mark.parametrize("fmt,shown", [
    ("text", lambda out: out.count("error: cfg: ")),
    ("json", lambda out: len(json.loads(out)["errors"]) - 1),
    ("github", lambda out: out.count("::error ") - 1),
])
def test_the_cap_holds_in_every_format(tmp_path: Path, monkeypatch, fmt, shown):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    master = tmp_path / "m-master.yaml"
    master.write_text(flow_mapping(2_000))
    res = run(["config", "validate", "--master", str(master), "--format", fmt])
    assert res.code == 1, res.err
    assert shown(res.out) == errors.MAX_FINDINGS_PER_FILE
    assert f"and {2_008 - errors.MAX_FINDINGS_PER_FILE} more findings in this file" in res.out
    if fmt == "text":
        assert res.out.rstrip().endswith("2008 error(s), 0 warning(s)")


def F(line: int, severity: str = "error", file: str = "a.yaml", omitted: int = 0) -> errors.Finding:
    return errors.Finding(file, line, 1, f"finding {line}", "", severity, omitted)


@pytest.mark.parametrize("findings,limit,expected", [
    ([F(1), F(2)], 2, [F(1), F(2)]),                                     # at the cap: nothing hidden
    ([F(1), F(2), F(3)], 2, [F(1), F(2), ("… and 1 more finding in this file", 3, "error", 1)]),
    ([F(1, "warning"), F(2, "warning"), F(3, "warning")], 1,            # only warnings hidden: a warning
     [F(1, "warning"), ("… and 2 more findings in this file", 2, "warning", 2)]),
    ([F(1, "warning"), F(2, "warning"), F(3)], 1,                        # an error hidden: an error
     [F(1, "warning"), ("… and 2 more findings in this file", 2, "error", 2)]),
    ([F(1), F(2, omitted=40), F(3)], 5,                                  # a producer's count joins the rest
     [F(1), F(3), ("… and 40 more findings in this file", 2, "error", 40)]),
    ([F(1), F(2), F(1, file="b.yaml"), F(2, file="b.yaml")], 1,         # per file
     [F(1), ("… and 1 more finding in this file", 2, "error", 1),
      F(1, file="b.yaml"), ("… and 1 more finding in this file", 2, "error", 1)]),
])
def test_cap_per_file(findings, limit, expected):
    got = errors.cap_per_file(findings, limit)
    assert [f if not f.omitted else (f.message, f.line, f.severity, f.omitted) for f in got] == expected


# ---- issue 25, 8: many repeated search-space entries ------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def repeated_points(n: int, distinct: bool = False) -> str:
    """One entry whose fixed-sequence search space is one row N times (DISTINCT: N rows of other concurrencies)."""
    head = (ROOT / "inferencex-e2e/configs/nvidia-master.yaml").read_text().split("\n\n")[0:2]
    entry = head[1].split("  scenarios:")[0]
    rows = [f"      - {{ tp: 4, ep: 1, conc-list: [{4 * (i + 1) if distinct else 4}] }}\n" for i in range(n)]
    return entry + "  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n" + "".join(rows)


def test_repeated_search_space_rows_are_refused_before_the_file_is_parsed(tmp_path: Path, monkeypatch):
    """150,000 repeats of one row took 43 s and 0.9 GB to be accepted in the pass (81 s and 548 MiB here on
    a busy machine; 0.8 s and 35 MiB now, benchmarks/config_validate.py --case duplicates): a row written
    twice is an error, found from the parser's events before the located parse, which never runs; the
    first screen of repeats is shown and the walk stops there."""
    master = tmp_path / "m-master.yaml"
    master.write_text(repeated_points(150_000))

    def no_parse(text, file="<input>"):
        raise AssertionError(f"the located parse ran on {file}")

    monkeypatch.setattr(load, "load_yaml_text", no_parse)
    report = validate.check(load.load_sources(None, [master]))
    assert not report.ok and len(report.errors) == errors.MAX_FINDINGS_PER_FILE
    first = report.errors[0]
    assert (first.line, first.col) == (17, 9) and first.message == (
        "dsv41flash-fp4-b300-sglang: this search-space row repeats the row at line 16 exactly: its points would be "
        "benchmarked twice")
    assert report.errors[-1].message.startswith("more search-space rows repeat from here on: only the first 49")
    assert report.counts["entries"] == 0


def test_rows_that_share_points_stay_a_warning(tmp_path: Path):
    """Not a repeat: two rows that list one concurrency each (InferenceX's mi355x entry does) are a warning."""
    master = tmp_path / "m-master.yaml"
    master.write_text(repeated_points(2, distinct=True).replace("conc-list: [8]", "conc-list: [4, 8]"))
    report = validate.check(load.load_sources(None, [master]))
    assert report.ok and [f.severity for f in report.findings] == ["warning"]
    assert "is already listed in another search-space entry" in report.findings[0].message


def test_a_schema_valid_entry_is_not_walked_by_jsonschema(tmp_path: Path, monkeypatch):
    """jsonschema was 5 of those 18 s; the schema interpreter gives the same verdict (test_quick_schema)
    and jsonschema now runs only for an entry it does not pass, to word the findings."""
    from ci_tools.config import schemas

    master = tmp_path / "m-master.yaml"
    master.write_text(repeated_points(3, distinct=True))
    real = schemas.validator

    def no_master(name, ref=None):
        assert name != "master", "jsonschema walked a valid master entry"
        return real(name, ref)

    monkeypatch.setattr(schemas, "validator", no_master)
    assert validate.check(load.load_sources(None, [master])).ok
    master.write_text(repeated_points(3, distinct=True).replace("tp: 4, ep: 1", "tp: four, ep: 1", 1))
    monkeypatch.setattr(schemas, "validator", real)
    assert "'tp' must be an integer" in validate.check(load.load_sources(None, [master])).errors[0].message
