"""Pareto frontier with strict dominance, claims, CSV input, and the CLI outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_tools.cli import cli
from ci_tools.errors import InputError
from ci_tools.results import pareto
from ci_tools.results.sources import load_points, results_from_csv
from ci_tools.results.pareto import Point
from tests.conftest import assert_golden

REPO = Path(__file__).resolve().parents[2]
SEED_CSV = REPO / "docs/seed-points.csv"
GOLDEN = REPO / "tests/golden/results"

# the points the seed PR dropped, with the numbers it quotes for them
DROPPED = [("TP4 c8", 16226, 415.8), ("TP2 c4", 18119, 383.5), ("TP2 c1", 12443, 431.7),
           ("TP2 c2", 12689, 392.6), ("TP4 c2", 7363, 569.7)]


@pytest.mark.parametrize("a,b,expected", [
    ((2, 2), (1, 1), True), ((2, 1), (1, 1), True), ((1, 2), (1, 1), True),
    ((1, 1), (1, 1), False),                      # equal: no strict dominance
    ((2, 0), (1, 1), False), ((0, 2), (1, 1), False), ((1, 1), (2, 2), False),
])
def test_dominates_strict(a, b, expected):
    assert pareto.dominates(Point("a", *a), Point("b", *b)) is expected


def test_equal_points_are_both_on_the_frontier():
    out = pareto.analyse([Point("a", 1, 1), Point("b", 1, 1), Point("c", 0.5, 0.5)])
    assert [(o["point"], o["frontier"], o["dominated_by"]) for o in out] == \
        [("a", True, []), ("b", True, []), ("c", False, ["a", "b"])]


def test_seed_seven_points_all_on_frontier():
    points = load_points(SEED_CSV)
    assert len(points) == 7
    assert all(o["frontier"] for o in pareto.analyse(points))


def test_seed_pr_claims_about_dropped_points():
    points = load_points(SEED_CSV) + [Point(n, t, i) for n, t, i in DROPPED]
    text = "\n".join(["# claims from the seed PR", "TP4 c16 (EP1) dominates TP4 c8", "TP4 c16 (EP1) dominates TP2 c4",
                      "TP4 c16 (EP1) dominates TP2 c1", "TP4 c16 (EP1) dominates TP2 c2", "TP4 c1 dominates TP4 c2",
                      "", "DEP2 c128 dominates DEP2 c64"])
    got = pareto.check_claims(points, pareto.parse_claims(text))
    # two of the PR's own claims do not hold on its numbers (read as P90 interactivity):
    # TP2 c1 has 431.7 > 424.9 tok/s/user, and TP4 c2 has 7,363 > 7,314 tok/s/GPU
    assert [c["holds"] for c in got] == [True, True, False, True, False, False]
    assert "lower P90 interactivity" in got[2]["why"]
    assert "lower throughput" in got[4]["why"]
    assert "lower P90 interactivity" in got[5]["why"]
    analysis = {o["point"]: o for o in pareto.analyse(points)}
    assert analysis["TP4 c8"]["dominated_by"] == ["TP4 c16 (EP1)"]
    assert analysis["TP4 c2"]["frontier"] is True


@pytest.mark.parametrize("text,message", [
    ("a beats b", "cannot read the claim"), (" dominates b", "cannot read the claim"),
    ("a dominates b dominates c", "cannot read the claim"),
])
def test_bad_claims(text, message):
    with pytest.raises(InputError) as exc:
        pareto.parse_claims(text, "claims.txt")
    assert message in exc.value.findings[0].message and exc.value.findings[0].line == 1


def test_unknown_point_in_claim():
    with pytest.raises(InputError) as exc:
        pareto.check_claims([Point("a", 1, 1)], pareto.parse_claims("a dominates zz"), "c.txt")
    assert "unknown point 'zz'" in exc.value.findings[0].message


@pytest.mark.parametrize("text,message", [
    ("point,tok_s_gpu\na,1\n", "missing column(s) intvty_p90"),
    ("point,tok_s_gpu,intvty_p90\na,x,1\n", "tok_s_gpu 'x' is not a number"),
    ("point,tok_s_gpu,intvty_p90\na,1,1\na,2,2\n", "appears twice"),
    ("point,tok_s_gpu,intvty_p90\n", "no points"),
    ("point,tok_s_gpu,intvty_p90\na,nan,1\n", "must be a finite number"),
    ("point,tok_s_gpu,intvty_p90\na,,1\n", "p.csv:2: tok_s_gpu '' is not a number"),   # required: filled
    ("point,tok_s_gpu,intvty_p90,ttft_p90\na,1,1,2\n", "unknown column(s) ttft_p90"),  # was ignored
    ("point,tok_s_gpu,intvty_p90\n" + "a" * 200_000 + ",1,1\n", "not a readable CSV"),  # csv.Error
])
def test_bad_csv(text, message):
    with pytest.raises(InputError) as exc:
        points_of_csv(text, "p.csv")
    assert message in str(exc.value)


def points_of_csv(text: str, file: str = "<csv>"):
    """A pareto CSV read as `results pareto` reads it (sources' one reader, pareto's columns)."""
    return pareto.points_from_results(results_from_csv(text, file, pareto.CSV_COLUMNS), file)


def test_pareto_and_compare_read_one_file_alike(tmp_path):
    """One reader: a comparison's CSV is a valid `results pareto` INPUT, its points those compare reads,
    and a collection's invalid results are left off the frontier (issue 27)."""
    from ci_tools.results.sources import load_side

    seed = REPO / "docs/examples/seed-compare/pr-local-results.csv"
    side = load_side(seed)
    got = load_points(seed)
    assert [p.name for p in got] == [r["point"]["name"] for r in side if r["headline"]["intvty_p90"] is not None]
    coll = tmp_path / "c.json"
    coll.write_text(json.dumps({"results": [{**side[0], "valid": False}, *side[1:]]}))
    assert [p.name for p in load_points(coll)] == [p.name for p in got[1:]]


def run(args):
    return CliRunner().invoke(cli, ["results", "pareto", *args])


def test_cli_json_shape(tmp_path):
    claims = tmp_path / "claims.txt"
    claims.write_text("TP2 c32 dominates TP2 c16\n")
    res = run([str(SEED_CSV), "--format", "json", "--claims", str(claims)])
    assert res.exit_code == 1  # the claim is false
    data = json.loads(res.output[: res.output.rindex("}") + 1])
    assert set(data) == {"points", "claims"}
    assert data["points"][0] == {"point": "TP4 c1", "tok_s_gpu": 7314.0, "intvty_p90": 625.7, "frontier": True,
                                 "dominated_by": []}
    assert data["claims"][0]["holds"] is False and "lower P90 interactivity" in data["claims"][0]["why"]


def test_cli_markdown_golden_and_png(tmp_path):
    png = tmp_path / "p.png"
    res = run([str(SEED_CSV), "--format", "markdown", "--plot", str(png)])
    assert res.exit_code == 0, res.output
    assert_golden(GOLDEN / "seed-pareto.md", res.output)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_parsers_fail_only_cleanly(text):
    for parse in (pareto.parse_claims, points_of_csv):
        try:
            parse(text)
        except InputError:
            pass


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e6), st.floats(0, 1e3)), min_size=1, max_size=12))
def test_frontier_properties(coords):
    points = [Point(f"p{i}", x, y) for i, (x, y) in enumerate(coords)]
    out = pareto.analyse(points)
    front = [p for p, o in zip(points, out) if o["frontier"]]
    assert front  # a finite set always has a non-dominated point
    for p, o in zip(points, out):
        assert o["frontier"] == (not o["dominated_by"])
        for name in o["dominated_by"]:  # every dominator really dominates
            assert pareto.dominates(next(q for q in points if q.name == name), p)
    for a in front:
        assert not any(pareto.dominates(b, a) for b in points)


def test_documented_pareto_block_is_current():
    readme = (REPO / "docs/contributor.md").read_text()
    head = "$ ci-tools results pareto docs/seed-points.csv --format markdown --plot docs/pareto-seed.png\n"
    start = readme.index(head) + len(head)
    block = readme[start:readme.index("```", start)]
    assert block == run([str(SEED_CSV), "--format", "markdown"]).output
    assert (REPO / "docs/pareto-seed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _png_facts(data: bytes) -> tuple[tuple[int, int], dict]:
    """(width, height) from IHDR and the tEXt chunks of a PNG."""
    import struct

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, size, text = 8, None, {}
    while at < len(data):
        (length,), kind = struct.unpack(">I", data[at:at + 4]), data[at + 4:at + 8]
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            text[key.decode("latin-1")] = value.decode("latin-1")
        at += 12 + length
    return size, text


def test_the_committed_pareto_png_is_the_current_render_of_the_seed_points(tmp_path):
    """Issue 24: docs/pareto-seed.png was an old render. Not pixels (fonts differ between machines):
    the committed file must have the current render's size and carry the data it was drawn from."""
    fresh = tmp_path / "pareto.png"
    assert run([str(SEED_CSV), "--format", "markdown", "--plot", str(fresh)]).exit_code == 0
    committed_size, committed = _png_facts((REPO / "docs/pareto-seed.png").read_bytes())
    fresh_size, now = _png_facts(fresh.read_bytes())
    assert "Description" in now and now["Description"].startswith("ci-tools chart sha256:")
    assert committed_size == fresh_size and committed.get("Description") == now["Description"], (
        "regenerate: ci-tools results pareto docs/seed-points.csv --format markdown --plot docs/pareto-seed.png")
