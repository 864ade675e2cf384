"""`results compare --from-main`: main's collected sweep runs read through the (fake) GitHub API."""

from __future__ import annotations

import json

import click
from click.testing import CliRunner

from ci_tools.cli import main
from ci_tools.github.client import GitHub
from ci_tools.results.baselines import main_results

KEY = "dsv41flash-fp4-gb300-sglang-agentic-dspark"


def result(name, tp, conc, tok, *, valid=True):
    return {"schema": "ci-tools/result/v1", "valid": valid,
            "point": {"name": name, "config-key": KEY, "tp": tp, "ep": 1, "dp-attn": False, "conc": conc},
            "headline": {"tok_s_gpu": tok, "intvty_p90": 100.0, "intvty_p50": 120.0, "ttft_p90_s": 1.0}}


def main_run(fake, run_id, results, *, conclusion="success", files=None):
    fake.add_run(run_id, head_sha=f"{run_id:040x}", branch="main", event="push", conclusion=conclusion,
                 artifacts=("changelog-metadata",))
    body = json.dumps({"schema": "ci-tools/results/v1", "results": results}).encode()
    fake.add_artifact_files(run_id, "results_bmk", files or {"results/results.json": body})


def test_history_newest_first_from_successful_runs_only(fake):
    main_run(fake, 101, [result("tp2-c64", 2, 64, 1000.0)])
    main_run(fake, 102, [result("tp2-c64", 2, 64, 9999.0)], conclusion="failure")  # never ingested
    main_run(fake, 103, [result("tp2-c64", 2, 64, 1010.0), result("tp4-c4", 4, 4, 50.0)])
    main_run(fake, 104, [], files={"junk.txt": b"x"})  # no results.json: skipped with a note
    gh = GitHub(fake.repo, "t", api_url=fake.url, sleep=lambda s: None)
    got = main_results(gh, history=5)
    assert got.runs == [103, 101]
    assert [r["headline"]["tok_s_gpu"] for r in got.results] == [1010.0, 50.0, 1000.0]
    assert any("no results.json" in n for n in got.notes)


def test_reading_stops_once_every_point_has_its_history(fake):
    for i in range(1, 8):
        main_run(fake, 200 + i, [result("tp2-c64", 2, 64, 1000.0 + i)])
    gh = GitHub(fake.repo, "t", api_url=fake.url, sleep=lambda s: None)
    from ci_tools.results.compare import identity

    want = {identity(result("tp2-c64", 2, 64, 0)["point"])}
    got = main_results(gh, wanted=want, history=3)
    assert got.runs == [207, 206, 205]
    downloads = [r for r in fake.requests if r.endswith("/zip")]
    assert len(downloads) == 3


def test_the_command_compares_with_main(fake, tmp_path):
    for i, tok in enumerate((1000.0, 1002.0, 998.0, 1001.0)):
        main_run(fake, 300 + i, [result("tp2-c64", 2, 64, tok)])
    head = tmp_path / "results.json"
    head.write_text(json.dumps({"schema": "ci-tools/results/v1", "results": [result("tp2-c64", 2, 64, 1100.0)]}))
    env = {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": fake.repo, "GITHUB_API_URL": fake.url}
    argv = ["results", "compare", str(head), "--from-main", "--format", "json"]
    r = CliRunner(env=env).invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    cell = data["points"][0]["metrics"]["tok_s_gpu"]
    # four main results with a 0.2 % spread: a 10 % gain is a clear improvement
    assert (cell["verdict"], cell["history"], cell["noise"]) == ("improved", 4, "spread of 4 main results")
    assert "main's results from run(s) 303, 302, 301, 300" in r.stderr


def test_both_sources_at_once_is_a_usage_error(tmp_path):
    argv = ["results", "compare", str(tmp_path), "--from-main", "--baseline", str(tmp_path)]
    r = CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])
    assert r.exit_code == 2 and "not both" in r.output
