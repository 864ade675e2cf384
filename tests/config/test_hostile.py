"""`config validate` on hostile masters (issue 15, item 9): a clean located refusal, never a traceback or a
hang, and a cost per entry that stays bounded however many invalid entries a file holds."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    assert len({f.line for f in report.errors}) == limit + 1
    assert f"{40_000 - limit} more entries not checked" in report.errors[-1].message
    assert report.counts["entries"] == 40_000
