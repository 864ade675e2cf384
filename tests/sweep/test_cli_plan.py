"""`ci-tools plan` and `ci-tools matrix` end to end: a real git repository, the real CLI entry point."""

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools.cli import main
from ci_tools.sweep.render import output_names
from tests.conftest import assert_golden

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "plan"


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def golden(name, text):
    assert_golden(GOLDEN / name, text)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_NAME", "GITHUB_RUN_ID"):
        monkeypatch.delenv(var, raising=False)


def test_demo_plan_table(capsys, demo_repo):
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                         "--label", "full-sweep-fail-fast")
    assert code == 0, err
    assert all(len(line) <= 100 for line in out.splitlines())
    assert "cluster:gb300-nv" in out and "canary" in out
    golden("demo-table.txt", out)


def test_demo_plan_json(capsys, demo_repo):
    code, out, _ = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                       "--label", "full-sweep-fail-fast", "--format", "json")
    plan = json.loads(out)
    assert plan["sweep"] is True and plan["reason"] and plan["mode"]["primary"] == "full-sweep-fail-fast"
    bench = [p for p in plan["points"] if not p["eval"] and not p["canary"]]
    assert [(p["tp"], p["ep"], p["dp-attn"], p["conc"], p["gpus"]) for p in bench] == [
        (4, 4, False, 1, 4), (4, 1, False, 4, 4), (4, 1, False, 16, 4), (2, 1, False, 16, 2), (2, 1, False, 32, 2),
        (2, 2, True, 64, 2), (2, 2, True, 128, 2)]
    assert {p["profile"] for p in bench} == {"agentx"}
    (canary,) = [p for p in plan["points"] if p["canary"]]
    assert (canary["conc"], canary["profile"], canary["canary-kind"]) == (1, "agentx-fast", "smoke")
    for p in plan["points"]:
        assert {"config-key", "runner", "tp", "ep", "dp-attn", "conc", "gpus", "gpu-hours", "canary", "profile"} <= set(p)
    assert set(plan["buckets"]) >= {"single-node-agentic", "evals"}
    assert {k: plan["totals"][k] for k in ("jobs", "points", "smoke-canaries", "eval-rows")} == {
        "jobs": 9, "points": 7, "smoke-canaries": 1, "eval-rows": 1}
    # the seed's agentic eval row runs the policy's eval harness (issue 13): planned, nothing refused
    (ev,) = plan["buckets"]["agentic-evals"]
    assert (ev["conc"], ev["tp"], ev["ep"], ev["dp-attn"]) == (128, 2, 2, True) and plan["refused"] == []


def test_demo_plan_github_outputs(capsys, demo_repo, tmp_path, monkeypatch):
    out_file, summary = tmp_path / "out", tmp_path / "summary"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out_file))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                         "--label", "full-sweep-fail-fast", "--format", "github")
    assert code == 0, err
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
    assert list(outputs) == output_names()
    assert outputs["sweep"] == "true" and outputs["fail-fast-single-node-agentic"] == "true"
    assert outputs["run-single-node-agentic"] == "true" and outputs["run-single-node-8k1k"] == "false"
    assert len(json.loads(outputs["matrix-single-node-agentic"])) == 7    # the smoke canary's point runs too
    assert json.loads(outputs["matrix-single-node-8k1k"]) == []
    canary = json.loads(outputs["canary-single-node-agentic"])
    assert [c["conc"] for c in canary] == [1] and outputs["canary-families"] == '["cluster:gb300-nv"]'
    assert json.loads(outputs["plan"])["totals"]["jobs"] == 9
    assert (outputs["jobs"], outputs["points"]) == ("9", "7")     # collect expects a result of every job
    assert outputs["run-agentic-evals"] == "true"
    assert outputs["concurrency-group"] == "sweep-<pr>-active"      # #17: a PR number belongs there, not a ref
    golden("demo-summary.md", summary.read_text())


@pytest.mark.parametrize("labels,said,totals", [
    # issue 24: "1 job (0 points, 1 smoke canary, 1 eval row)": the eval canary counted as a smoke
    # canary and the parts adding to 2; JSON totals.points counted jobs
    (["full-sweep-fail-fast", "evals-only"], "total: 1 job (1 eval row, the canary)",
     {"jobs": 1, "points": 0, "smoke-canaries": 0, "eval-rows": 1}),
    (["full-sweep-fail-fast"], "total: 9 jobs (7 points, 1 smoke canary, 1 eval row)",
     {"jobs": 9, "points": 7, "smoke-canaries": 1, "eval-rows": 1}),
    (["full-sweep-fail-fast-no-canary", "all-evals"], "total: 14 jobs (7 points, 7 eval rows)",
     {"jobs": 14, "points": 7, "smoke-canaries": 0, "eval-rows": 7}),
])
def test_job_counts_add_up(capsys, demo_repo, labels, said, totals):
    args = ["plan", "--repo", str(demo_repo), "--base", "base", "--head", "head"] + [a for l in labels for a in ("--label", l)]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert said in out, out
    code, out, _ = run(capsys, *args, "--format", "json")
    got = json.loads(out)["totals"]
    assert {k: got[k] for k in totals} == totals and got["jobs"] == len(json.loads(out)["points"])


def test_gate_only_from_real_payload(capsys, shared, tmp_path, monkeypatch):
    out_file = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out_file))
    monkeypatch.setenv("GITHUB_RUN_ID", "7")
    path = shared / "corpus" / "github-webhooks" / "pull_request" / "labeled.payload.json"
    code, _, err = run(capsys, "plan", "--repo", str(REPO), "--event-path", str(path), "--gate-only",
                       "--format", "github")
    assert code == 0, err
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
    assert list(outputs) == output_names(gate_only=True)
    assert (outputs["sweep"], outputs["check"], outputs["restarts"], outputs["concurrency-group"]) == (
        "false", "false", "false", "sweep-2-7")


def test_gate_only_is_fast_enough_to_skip_configs(tmp_path, shared):
    """No config, changelog or git is read: an empty directory with only the policy file works."""
    (tmp_path / "inferencex-e2e").mkdir()
    (tmp_path / "inferencex-e2e" / "ci-policy.yaml").write_bytes((REPO / "inferencex-e2e" / "ci-policy.yaml").read_bytes())
    payload = json.loads((shared / "corpus/github-webhooks/pull_request/synchronize.payload.json").read_text())
    payload["pull_request"]["labels"] = [{"name": "full-sweep-fail-fast"}]
    ev = tmp_path / "ev.json"
    ev.write_text(json.dumps(payload))
    proc = subprocess.run([sys.executable, "-m", "ci_tools", "plan", "--repo", str(tmp_path), "--event-path", str(ev),
                           "--gate-only", "--format", "json", "--head-message", "x"], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["sweep"] and d["concurrency-group"] == "sweep-2-active"


def test_a_pasted_label_list_plans_like_ci(capsys, demo_repo):
    """#17: labels the policy does not name are ignored, as CI ignores them, with a note naming them and
    the known ones, so a PR's real label list can be pasted; the plan is the one CI makes."""
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                         "--label", "full-sweep-fail-fast", "--label", "skip_queue", "--label", "bug")
    assert code == 0, err
    assert out.startswith("SWEEP: local preview: sweep with full-sweep-fail-fast\n")
    # skip_queue is a priority label (read by the plan), so only bug is named
    assert err.count("note: label(s) bug are not sweep labels, so the plan ignores them as CI does") == 1
    assert "full-sweep-fail-fast" in err and "agentx-fast" in err
    _, clean, _ = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                      "--label", "full-sweep-fail-fast")
    assert out == clean


def test_a_mistyped_label_gets_a_did_you_mean(capsys, demo_repo):
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                         "--label", "full-sweep-fail-fats")
    assert code == 0 and out.startswith("NO SWEEP: no primary sweep label")
    assert "full-sweep-fail-fats (did you mean full-sweep-fail-fast?)" in err


def test_conflicting_primaries_fail_naming_them(capsys, demo_repo, tmp_path, monkeypatch):
    out_file = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out_file))
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                         "--label", "full-sweep-fail-fast", "--label", "sweep-enabled", "--format", "github")
    assert code == 1
    # #17: said once in the log (the verdict on stderr), and in the `error` output for the workflow
    assert (out + err).count("conflicting primary sweep labels: full-sweep-fail-fast, sweep-enabled") == 1
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
    assert outputs["sweep"] == "false" and "conflicting" in outputs["error"]


@pytest.mark.parametrize("extra", [[], ["--gate-only"], ["--format", "json"], ["--gate-only", "--format", "json"]])
def test_conflicting_primaries_are_said_once_in_every_format(capsys, demo_repo, extra):
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                         "--label", "full-sweep-fail-fast", "--label", "sweep-enabled", *extra)
    assert code == 1
    said = "conflicting primary sweep labels: full-sweep-fail-fast, sweep-enabled"
    if "json" in extra:                  # the document says it (`error`); stderr does not repeat it
        assert said in json.loads(out)["error"] and said not in err
    else:
        assert (out + err).count(said) == 1 and (out + err).startswith("ERROR: " + said)


@pytest.mark.parametrize("content, message", [
    ("{not json", "malformed event file: not JSON"),
    ('{"pull_request": {"number": 1}, "action": "labeled"}', "pull_request.head.sha"),
    ("[1, 2]", "expected a JSON object"),
])
def test_malformed_event_file(capsys, demo_repo, tmp_path, content, message):
    ev = tmp_path / "event.json"
    ev.write_text(content)
    code, _, err = run(capsys, "plan", "--repo", str(demo_repo), "--event-path", str(ev))
    assert code == 1 and str(ev) in err and message in err


def test_missing_event_file(capsys, demo_repo, tmp_path):
    code, _, err = run(capsys, "plan", "--repo", str(demo_repo), "--event-path", str(tmp_path / "nope.json"))
    assert code == 2 and "nope.json" in err  # a missing input


def _commit_entry(repo, key):
    log = repo / "inferencex-e2e" / "perf-changelog.yaml"
    log.write_text(log.read_text() + f"\n- config-keys:\n    - {key}\n  description:\n    - \"x\"\n"
                   "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "more"], check=True)


def test_unknown_config_key_in_entry(capsys, demo_repo, tmp_path):
    repo = tmp_path / "r"
    subprocess.run(["git", "clone", "-q", str(demo_repo), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "head"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", "switch", "-qc", "x"],
                   check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.email", "a@b"], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.name", "a"], check=True)
    _commit_entry(repo, "dsv41flash-fp4-b300-sglan")
    code, out, err = run(capsys, "plan", "--repo", str(repo), "--base", "head", "--head", "HEAD",
                       "--label", "full-sweep-fail-fast")
    assert code == 1
    assert "unknown config key(s) 'dsv41flash-fp4-b300-sglan'" in out and "did you mean dsv41flash-fp4-b300-sglang" in out
    # located the way `changelog lint` and `config validate` say it: file:line: error: message (issue 24)
    assert re.search(r"^inferencex-e2e/perf-changelog\.yaml:\d+: error: unknown config key", out, re.M), out
    assert "error: inferencex-e2e" not in out + err


def test_no_primary_label_explains(capsys, demo_repo):
    code, out, _ = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head")
    assert code == 0 and out.startswith("NO SWEEP: no primary sweep label")


def test_skip_sweep_in_head_commit(capsys, demo_repo):
    code, out, _ = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                       "--label", "full-sweep-enabled", "--head-message", "wip [skip-sweep]")
    assert code == 0 and "[skip-sweep]" in out and "NO SWEEP" in out


# ---- matrix ----------------------------------------------------------------------------------------

def test_matrix_full_sweep_corpus_bytes(capsys, shared):
    cfg = shared / "corpus" / "inferencex" / "configs"
    code, out, err = run(capsys, "matrix", "full-sweep", "--no-evals", "--config-file", str(cfg / "nvidia-master.yaml"),
                         "--config-file", str(cfg / "amd-master.yaml"), "--format", "json")
    assert code == 0, err
    assert len(out.encode()) == 1_030_702 and len(json.loads(out)) == 1820


def test_matrix_test_config_pattern(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    code, out, _ = run(capsys, "matrix", "test-config", "--config-key", "dsv41flash-*-dspark", "--no-evals",
                         "--format", "json")
    rows = json.loads(out)
    assert code == 0 and [r["conc"] for r in rows] == [1, 4, 16, 16, 32, 64, 128]


def test_matrix_github_format_writes_a_step_summary(capsys, monkeypatch, tmp_path):
    """#17: `--format github` adds a step summary (rows per runner and family) through github/actions;
    stdout is the same JSON as `--format json`."""
    monkeypatch.chdir(REPO)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out"))
    args = ["matrix", "test-config", "--config-key", "dsv41flash-*-dspark"]
    code, out, err = run(capsys, *args, "--format", "github")
    assert code == 0, err
    _, plain, _ = run(capsys, *args, "--format", "json")
    assert out == plain
    rows = json.loads(out)
    evals = sum(1 for r in rows if r.get("run-eval"))
    assert summary.read_text() == (
        f"### matrix: {len(rows)} row(s)\n\n"
        "| runner | single-node-agentic | marked for evals | total |\n|---|--:|--:|--:|\n"
        f"| `cluster:gb300-nv` | {len(rows)} | {evals} | {len(rows)} |\n")


def test_matrix_summary_counts_every_family_per_runner(shared):
    from ci_tools.sweep.flow import MatrixRequest, matrix_rows
    from ci_tools.sweep.render import matrix_summary

    cfg = shared / "corpus" / "inferencex" / "configs"
    rows = matrix_rows(MatrixRequest(config_files=(str(cfg / "nvidia-master.yaml"), str(cfg / "amd-master.yaml"))))
    text = matrix_summary(rows)
    assert text.startswith(f"### matrix: {len(rows)} row(s)\n")
    total = text.splitlines()[-1]
    evals = sum(1 for r in rows if r.get("run-eval"))
    assert evals and total.startswith("| **total** | ") and total.endswith(f" | {evals} | {len(rows)} |")
    body = [line for line in text.splitlines()[4:-1]]
    assert sum(int(line.rsplit("|", 2)[-2]) for line in body) == len(rows)
    assert matrix_summary([]) == "### matrix: 0 row(s)\n\nThe filters select no row.\n"


@pytest.mark.parametrize("args, message", [
    (["test-config", "--config-key", "nope"], "unknown config key(s): 'nope'"),
    (["full-sweep", "--runner-type", "h100"], "invalid runner type(s): h100. Runner labels in"),
    (["full-sweep", "--no-evals", "--all-evals"], "cannot be combined"),
    (["full-sweep", "--step-size", "1"], "--step-size must be greater than 1"),
    (["full-sweep", "--min-conc", "8", "--max-conc", "4"], "--min-conc must be less than or equal"),
])
def test_matrix_usage_errors(capsys, monkeypatch, args, message):
    monkeypatch.chdir(REPO)
    code, _, err = run(capsys, "matrix", *args)
    assert code == 2 and message in err


def test_after_canary_cli(capsys, demo_repo, tmp_path, monkeypatch):
    out_file = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out_file))
    args = ["plan", "--repo", str(demo_repo), "--base", "base", "--head", "head", "--label", "full-sweep-fail-fast",
            "--format", "github", "--after-canary"]
    code, _, err = run(capsys, *args, "--passed-family", "cluster:gb300-nv")
    assert code == 0, err
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
    assert len(json.loads(outputs["matrix-single-node-agentic"])) == 7 and outputs["canary"] == "[]"
    out_file.write_text("")
    code, _, err = run(capsys, *args)
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
    assert code == 0 and outputs["sweep"] == "false" and outputs["matrix-single-node-agentic"] == "[]"
    assert "canary failed or missing for cluster:gb300-nv" in outputs["reason"]
    code, _, err = run(capsys, "plan", "--repo", str(demo_repo), "--base", "base", "--head", "head",
                       "--passed-family", "x")
    assert code == 2 and "--after-canary" in err


def test_append_only_entry_plans_only_the_added_point(capsys, demo_repo, tmp_path):
    repo = tmp_path / "r"
    subprocess.run(["git", "clone", "-q", str(demo_repo), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-b", "x", "head"], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.email", "a@b"], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.name", "a"], check=True)
    master = repo / "inferencex-e2e" / "configs" / "nvidia-master.yaml"
    master.write_text(master.read_text().replace("conc-list: [16, 32] }", "conc-list: [16, 32, 48] }"))
    recipe = repo / "recipes" / "gb300-dsv41flash-fp4-sglang" / "agentic.yaml"
    text = recipe.read_text()
    recipe.write_text(text + "\n  tp2-c48:\n    tp: 2\n    ep: 1\n    conc: 48\n")   # points is the last mapping
    log = repo / "inferencex-e2e" / "perf-changelog.yaml"
    log.write_text(log.read_text() + "\n- config-keys:\n    - dsv41flash-fp4-gb300-sglang-agentic-dspark\n"
                   "  scenario-type:\n    - agentic-coding\n  description:\n    - \"Add TP2 c48.\"\n"
                   "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2\n  append-only: true\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "c48"], check=True)
    code, out, err = run(capsys, "plan", "--repo", str(repo), "--base", "head", "--head", "HEAD",
                         "--label", "non-canary-full-sweep-enabled", "--format", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert [(p["parallelism"], p["conc"]) for p in plan["points"]] == [("TP2 EP1", 48)]


def test_a_point_the_recipe_lacks_is_refused_at_plan_time(capsys, demo_repo, tmp_path):
    """The master gains c48 but the recipe has no such point: plan fails naming the row and the fix,
    before any GPU is booked (runner run would have failed on the runner)."""
    repo = tmp_path / "r"
    subprocess.run(["git", "clone", "-q", str(demo_repo), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-b", "x", "head"], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.email", "a@b"], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.name", "a"], check=True)
    master = repo / "inferencex-e2e" / "configs" / "nvidia-master.yaml"
    master.write_text(master.read_text().replace("conc-list: [16, 32] }", "conc-list: [16, 32, 48] }"))
    log = repo / "inferencex-e2e" / "perf-changelog.yaml"
    log.write_text(log.read_text() + "\n- config-keys:\n    - dsv41flash-fp4-gb300-sglang-agentic-dspark\n"
                   "  scenario-type:\n    - agentic-coding\n  description:\n    - \"Add TP2 c48.\"\n"
                   "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2\n  append-only: true\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "c48"], check=True)
    code, out, err = run(capsys, "plan", "--repo", str(repo), "--base", "head", "--head", "HEAD",
                         "--label", "non-canary-full-sweep-enabled")
    assert code == 1
    said = ("1 planned row(s) cannot run, so nothing is booked: dsv41flash-fp4-gb300-sglang-agentic-dspark "
            "(single-node-agentic, TP2 EP1, conc 48): recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml: no point "
            "with tp=2 ep=1 dp-attn=false conc=48. Fix: add the point")
    assert out.startswith("ERROR: ") and said in " ".join(out.split()) and said not in err   # said once
    assert "refused (cannot run): " in out


def test_push_event_plans_the_full_sweep_without_canary(capsys, demo_repo, tmp_path):
    def sha(ref):
        return subprocess.run(["git", "-C", str(demo_repo), "rev-parse", ref], capture_output=True, text=True,
                              check=True).stdout.strip()
    ev = tmp_path / "push.json"
    ev.write_text(json.dumps({"ref": "refs/heads/main", "before": sha("base"), "after": sha("head"),
                              "head_commit": {"message": "seed PR [skip-sweep]"}}))
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--event-path", str(ev))
    assert code == 0, err
    assert out.startswith("SWEEP: push to the default branch") and "mode: push" in out
    code, out, err = run(capsys, "plan", "--repo", str(demo_repo), "--event-path", str(ev), "--format", "json")
    plan = json.loads(out)
    assert plan["canaries"] == [] and not any(plan["fail-fast"].values()) and plan["totals"]["jobs"] == 8
    assert plan["refused"] == []     # the seed's eval row runs too
    assert plan["concurrency-group"] == f"sweep-{sha('head')}-active"


def test_plan_path_imports_stay_light(demo_repo):
    code = ("import sys\nfrom ci_tools.cli import main\n"
            f"try:\n    main(['plan', '--repo', {str(demo_repo)!r}, '--base', 'base', '--head', 'head', "
            "'--label', 'full-sweep-fail-fast', '--format', 'json'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "heavy = [m for m in ('jsonschema', 'httpx', 'github', 'ruamel.yaml') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr


def test_unknown_ref_is_named(capsys, demo_repo):
    code, _, err = run(capsys, "plan", "--repo", str(demo_repo), "--base", "nope-branch", "--head", "head",
                       "--label", "full-sweep-fail-fast")
    assert code == 2 and "unknown git ref 'nope-branch'" in err


def test_canary_dir_releases_by_the_markers_the_canaries_left(capsys, demo_repo, tmp_path, monkeypatch):
    """`--canary-dir`: the release job's one command reads the downloaded canary-passed-* markers."""
    out_file = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out_file))
    canaries = tmp_path / "canaries"
    args = ["plan", "--repo", str(demo_repo), "--base", "base", "--head", "head", "--label", "full-sweep-fail-fast",
            "--format", "github", "--canary-dir", str(canaries)]

    def outputs():
        got = dict(line.split("=", 1) for line in out_file.read_text().splitlines())
        out_file.write_text("")
        return got

    code, _, err = run(capsys, *args)                        # no canary passed: download left no folder
    got = outputs()
    assert code == 0 and got["sweep"] == "false" and "canary failed or missing for cluster:gb300-nv" in got["reason"]
    (canaries / "canary-passed-0").mkdir(parents=True)
    (canaries / "canary-passed-0" / "family").write_text("cluster:gb300-nv\n")
    code, _, err = run(capsys, *args)
    got = outputs()
    assert code == 0, err
    assert len(json.loads(got["matrix-single-node-agentic"])) == 7 and got["canary"] == "[]"
    (canaries / "canary-passed-0" / "family").write_text("cluster:b300\n")  # not what canary 0 ran on
    code, _, err = run(capsys, *args)
    got = outputs()
    assert code == 0 and got["sweep"] == "false"
    assert "canary-passed-0: names 'cluster:b300', but canary 0 ran on cluster:gb300-nv" in err
    code, _, err = run(capsys, *args, "--passed-family", "cluster:gb300-nv")
    assert code == 2 and "give one" in err


def test_a_comma_separated_label_list_is_split_and_said(capsys, demo_repo):
    """Issue 24: `--label a,b` was one unknown label (ignored, so the plan silently lost both)."""
    base = ["plan", "--repo", str(demo_repo), "--base", "base", "--head", "head", "--format", "json"]
    code, split, err = run(capsys, *base, "--label", "full-sweep-fail-fast, evals-only")
    assert code == 0, err
    assert "note: --label 'full-sweep-fail-fast, evals-only' is read as 2 labels: full-sweep-fail-fast, evals-only" in err
    _, apart, _ = run(capsys, *base, "--label", "full-sweep-fail-fast", "--label", "evals-only")
    assert json.loads(split) == json.loads(apart) and json.loads(split)["mode"]["modifiers"] == ["evals-only"]
