"""The seams between commands a user meets (issue 39): one option vocabulary, exit codes as documented,
errors where a workflow reader looks, a progress line on long work, colour on a terminal, terminal
text in one language, a demo that installs what the README's commands need, README samples that are
the commands' real output."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools.cli import main
from tests.conftest import H100_RUN, REPO

SEED = REPO / "docs" / "examples" / "seed-compare"
OLD = ("--repo-root", "--github-repo", "--repository")


def run(*argv: str, env: dict | None = None, color: bool = False):
    return CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(list(argv))), [], env=env, color=color)


def commands() -> list[str]:
    from tests.test_conventions import COMMANDS

    return sorted(COMMANDS)


def ci(args: list[str], cwd: Path, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))}
    full.update(env, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "ci_tools", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=120)


# ---- one vocabulary ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", commands())
def test_one_name_for_a_repository_and_one_for_the_checkout(name):
    """`--repo` is always OWNER/NAME (as gh), `--root` always the checkout; the old spellings are gone
    from --help."""
    r = run(*name.split(), "--help")
    assert r.exit_code == 0, r.output
    text = r.output
    assert not any(old in text for old in OLD), f"{name}: an old spelling in --help"
    for m in re.finditer(r"^  --repo (.*)$", text, re.M):
        assert m.group(1).strip().startswith("OWNER/NAME"), f"{name}: --repo {m.group(1)!r}"
    for m in re.finditer(r"^  --root (.*)$", text, re.M):
        assert m.group(1).strip().startswith("DIRECTORY"), f"{name}: --root {m.group(1)!r}"


@pytest.mark.parametrize("argv, said", [
    (["reuse", "ready", "--repo-root", "nope-dir", "--pr", "1"], "nope-dir"),           # --root's old name
    (["results", "publish", "r.html", "--repository", "not a repo", "--run-id", "1"], "not OWNER/NAME"),
    (["plan", "--github-repo", "also not", "--pr", "1"], "not OWNER/NAME"),              # plan's --repo
])
def test_the_old_spellings_still_work(argv, said):
    r = run(*argv)
    assert r.exit_code == 2 and said in r.output and "no such option" not in r.output.lower(), r.output


def test_plan_takes_its_checkout_as_root_and_still_as_the_old_repo_dir(tmp_path):
    seed = tmp_path / "seed"
    seed.mkdir()
    sys.path.insert(0, str(REPO / "examples"))
    import demo

    demo.build_scratch_repo(seed)
    for flag in ("--root", "--repo"):
        out = ci(["plan", "--base", "base", "--head", "head", "--label", "full-sweep-fail-fast", flag, str(seed)],
                 cwd=tmp_path)
        assert out.returncode == 0 and "total: 9 jobs" in out.stdout, (flag, out.stderr)


# ---- exit codes as documented -----------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["plan", "--base", "HEAD~1", "--head", "HEAD", "--label", "full-sweep-fail-fast"],
    ["changelog", "lint", "--base", "HEAD~1", "--head", "HEAD"],
    ["changelog", "canonicalize", "--pr", "1", "--base", "HEAD"],
])
def test_not_a_git_repository_is_a_missing_input_with_an_option_that_exists(tmp_path, argv):
    out = ci(argv, cwd=tmp_path)
    assert out.returncode == 2, out.stderr                   # docs: 2 is a usage error or a missing input
    assert "not inside a git repository" in out.stderr and "--root" in out.stderr
    assert "--root" in run(*argv[:2 if argv[0] == "changelog" else 1], "--help").output


# ---- errors where a workflow reader looks -------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["results", "pareto", "nope.csv"],
    ["results", "compare", "nope.csv", "--baseline", "nope-base.csv"],
    ["config", "validate", "--master", "nope-master.yaml"],
    ["plan", "--event-path", "nope.json"],
    ["results", "report", "nope.csv", "--out", "r.html", "--no-such-option"],
])
def test_every_error_under_format_github_is_an_annotation_and_in_the_summary(tmp_path, argv):
    summary = tmp_path / "summary.md"
    summary.write_text("")
    out = ci([*argv, "--format", "github"], cwd=tmp_path, GITHUB_STEP_SUMMARY=str(summary))
    assert out.returncode in (1, 2), out.stderr
    assert re.search(r"^::error[ :]", out.stdout, re.M), out.stdout
    text = summary.read_text()
    assert text.startswith("### ci-tools ") and "failed" in text and ("nope" in text or "no-such-option" in text), text


# ---- a progress line on long work -------------------------------------------------------------------

def test_results_process_says_what_it_reads_before_a_long_read(tmp_path, monkeypatch):
    """A 2.6 GB export took 37 s in silence; a big export is named, with its size, before it is read."""
    import shutil

    from ci_tools.results import flow

    job = tmp_path / "job"
    shutil.copytree(H100_RUN / "agentic-c4", job, ignore=shutil.ignore_patterns("result.json"))
    monkeypatch.setattr(flow, "PROGRESS_MIN_BYTES", 1)          # the real export is small: every size is "big"
    r = run("results", "process", str(job))
    assert r.exit_code == 0, r.output
    lines = r.stderr.splitlines()
    assert lines[0].startswith("results process: reading ") and "profile_export.jsonl (" in lines[0]
    assert any(re.match(r"results process: read 1 export\(s\) in [\d.]+ s", line) for line in lines)


# ---- colour on a terminal --------------------------------------------------------------------------

def test_errors_are_coloured_on_a_terminal_and_never_with_no_color():
    r = run("results", "pareto", "nope.csv", color=True)
    assert r.exit_code == 2 and "\x1b[31m" in r.stderr and "error:" in click.unstyle(r.stderr)
    plain = run("results", "pareto", "nope.csv", color=True, env={"NO_COLOR": "1"})
    assert "\x1b[" not in plain.stderr and "error: nope.csv" in plain.stderr
    piped = run("results", "pareto", "nope.csv")                # not a terminal
    assert "\x1b[" not in piped.stderr


# ---- one language ------------------------------------------------------------------------------------

CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_terminal_and_summary_text_is_in_one_language(fmt):
    r = run("results", "compare", str(SEED / "pr-local-results.csv"), "--baseline", str(SEED / "main-baseline.csv"),
            "--format", fmt)
    assert r.exit_code == 0 and r.stdout and not CJK.search(r.stdout), CJK.findall(r.stdout)[:5]


# ---- the demo installs what the README's commands need ------------------------------------------------

def test_the_demo_installs_what_the_documented_commands_need(monkeypatch):
    """After `dev.py demo`, `results pareto --plot` and `results compare --plot` (documented in the
    README and docs) must run: the demo installs the extras that provide their packages."""
    import importlib.util
    import tomllib

    spec = importlib.util.spec_from_file_location("devpy", REPO / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "devpy", dev)        # its dataclasses look their module up
    spec.loader.exec_module(dev)
    asked: list[bool] = []
    monkeypatch.setattr(dev, "ensure_dev_env", lambda: asked.append(True))
    monkeypatch.setattr(dev, "run", lambda *a, **k: 0)
    assert dev.demo([]) == 0 and asked
    # the demo installs .venv from the dev lock, compiled from these requirements
    locked = dev.LOCK["dev"].inputs()
    needs = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    documented = (REPO / "README.md").read_text() + "".join(p.read_text() for p in (REPO / "docs").glob("*.md"))
    assert "--plot" in documented
    assert all(d in locked for d in needs["plot"]) and any(d.startswith("matplotlib") for d in needs["plot"])


def test_the_report_page_needs_no_plotting_package(tmp_path):
    """`results report` after `dev.py demo` exited 2 (plotly missing). The page is drawn by ci-tools
    itself (inline SVG): with plotly and matplotlib unimportable it still writes the whole page."""
    out = tmp_path / "sweep-report.html"
    blocked = ("import sys; sys.modules.update(dict.fromkeys(('plotly', 'matplotlib'))); "
               "from ci_tools.cli import main; main()")
    res = subprocess.run([sys.executable, "-c", blocked, "results", "report", str(SEED / "pr-local-results.csv"),
                          "--baseline", str(SEED / "main-baseline.csv"), "--out", str(out)], cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    page = out.read_text(encoding="utf-8")
    assert 'class="chart"' in page and 'id="overall"' in page


# ---- README samples are real output ----------------------------------------------------------------

def test_the_readmes_plan_sample_is_the_commands_output(tmp_path):
    text = (REPO / "README.md").read_text()
    start = text.index("On the seed PR, `plan` prints")
    sample = text[text.index("```text\n", start) + 8:text.index("```\n", text.index("```text\n", start) + 8)]
    sys.path.insert(0, str(REPO / "examples"))
    import demo

    demo.build_scratch_repo(tmp_path)
    out = ci(["plan", "--base", "base", "--head", "head", "--label", "full-sweep-fail-fast"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    real = out.stdout.splitlines()
    at = 0
    for line in sample.splitlines():
        if line.strip() == "...":
            continue
        assert line in real[at:], f"README's plan sample: {line!r} is not in the output (in this order)"
        at = real.index(line, at) + 1
