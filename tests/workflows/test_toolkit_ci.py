"""Finding 23.8: toolkit-ci.yml's test job passes on a GitHub-hosted runner, which has no ../shared and
runs as a non-root user with passwordless sudo.

Its steps run here as that runner would run them, as far as is possible offline: as an unprivileged
user (nobody, through setpriv), in a workspace with no ../shared, with sudo and apt-get that record
what they are asked. The checkout steps cannot reach GitHub, so what they leave is made from the
corpus itself: an InferenceX clone whose main branch replays the history bundle's 218 versions (with
an older version before them, and commits between them that touch nothing the history keeps), a
checkout of octokit/webhooks's payload examples. `.ci/corpus.py` must then lay
out exactly the corpus the developers have, and the tests that read it pass against it.
"""

from __future__ import annotations

import copy
import filecmp
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import gh_expr
import gh_runtime as rt
from wf_env import REPO
from tests import public_clone

PINS = json.loads((REPO / ".ci" / "corpus.json").read_text())
JOB = rt.workflow("toolkit-ci.yml").jobs["tests"]
NOBODY = 65534


def sh(*args, cwd=None, env=None, input=None) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, input=input, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(map(str, args))}: {done.stderr}"
    return done.stdout.strip()


def checkouts() -> list[dict]:
    return [s for s in JOB["steps"] if s.get("uses", "").startswith("actions/checkout@") and "repository" in s.get("with", {})]


def test_the_job_checks_out_each_source_at_its_pin_and_the_pins_are_the_corpus():
    refs = {s["with"]["repository"]: s["with"]["ref"] for s in checkouts()}
    assert refs[PINS["inferencex"]["repository"]] == PINS["inferencex"]["commit"]
    assert refs[PINS["github-webhooks"]["repository"]] == PINS["github-webhooks"]["commit"]
    ix = next(s for s in checkouts() if s["with"]["repository"] == PINS["inferencex"]["repository"])
    assert ix["with"]["fetch-depth"] == 0, "the history is rebuilt from the checkout's history"


def test_the_pins_match_the_corpus_the_developers_have(shared):
    corpus = shared / "corpus"
    assert (corpus / "inferencex" / "SOURCE_COMMIT").read_text().strip() == PINS["inferencex"]["commit"]
    listed = sorted(str(p.relative_to(corpus / "inferencex")) for p in (corpus / "inferencex").rglob("*")
                    if p.is_file() and p.name != "SOURCE_COMMIT")
    assert listed == sorted(PINS["inferencex"]["files"])
    assert sorted(p.name for p in (corpus / "github-webhooks").iterdir() if p.is_dir()) == sorted(PINS["github-webhooks"]["events"])
    subjects = bundle_log(corpus / "inferencex-history" / PINS["inferencex-history"]["bundle"], "%s")
    assert len(subjects) == PINS["inferencex-history"]["versions"]
    assert subjects[0] == f"ix {PINS['inferencex-history']['first']}" and subjects[-1] == f"ix {PINS['inferencex']['commit'][:9]}"


def bundle_log(bundle: Path, fmt: str) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        sh("git", "clone", "-q", str(bundle), tmp)
        return sh("git", "-C", tmp, "log", "--reverse", f"--format={fmt}").splitlines()


# ---- what the checkout steps leave, made from the corpus ------------------------------------------

def top_level(repo: Path, trees: list[str]) -> list[list[tuple[str, str, str]]]:
    """Each tree's top-level entries (mode, object, name), read in one `git cat-file --batch`."""
    raw = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"], input="".join(t + "\n" for t in trees).encode(),
                         capture_output=True, check=True).stdout
    out, at = [], 0
    for _ in trees:
        header_end = raw.index(b"\n", at)
        _, kind, size = raw[at:header_end].split()
        assert kind == b"tree"
        body, at = raw[header_end + 1:header_end + 1 + int(size)], header_end + 2 + int(size)
        entries, i = [], 0
        while i < len(body):
            space, nul = body.index(b" ", i), body.index(b"\0", i)
            mode = body[i:space].decode().rjust(6, "0")
            entries.append((mode, body[nul + 1:nul + 21].hex(), body[space + 1:nul].decode()))
            i = nul + 21
        out.append(entries)
    return out


def inferencex_checkout(corpus: Path, dest: Path) -> tuple[str, str]:
    """A clone of InferenceX as actions/checkout (fetch-depth 0) leaves it: main replays the bundle's
    versions, each followed by a commit that changes only the README, after one older version;
    every other pinned file is there throughout. (HEAD, the first kept version)."""
    sh("git", "clone", "-q", str(corpus / "inferencex-history" / PINS["inferencex-history"]["bundle"]), str(dest))
    versions = sh("git", "-C", str(dest), "rev-list", "--reverse", "HEAD").split()
    others = {name: (corpus / "inferencex" / name).read_bytes() for name in PINS["inferencex"]["files"]
              if name != "perf-changelog.yaml" and not name.startswith("configs/")}
    older = (corpus / "inferencex" / "perf-changelog.yaml").read_bytes()[:200]
    # One git fast-import makes the 2 x 218 commits (a git process per tree edit took 20 s): each
    # commit's tree is its version's top-level entries, by object id, with the pinned files on top.
    stream = bytearray()
    mark_of: dict[str, int] = {}           # fast-import's marks are numbers

    def mark(name: str) -> int:
        return mark_of.setdefault(name, len(mark_of) + 1)

    def blob(name: str, data: bytes) -> None:
        stream.extend(b"blob\nmark :%d\ndata %d\n%s\n" % (mark(name), len(data), data))

    def replay(name: str, message: str, entries: list[tuple[str, str, str]], files: dict[str, str]) -> None:
        stream.extend(f"commit refs/heads/replayed\nmark :{mark(name)}\ncommitter a <a@x> {next(clock)} +0000\n"
                      f"data {len(message)}\n{message}\ndeleteall\n".encode())
        stream.extend("".join(f"M {mode} {obj} {path}\n" for mode, obj, path in entries).encode())
        stream.extend("".join(f"M 100644 :{mark(m)} {path}\n" for path, m in files.items()).encode())
        stream.extend(b"\n")

    marks = {path: f"f{n}" for n, path in enumerate(others)}
    for path, m in marks.items():
        blob(m, others[path])
    blob("older", older)
    trees = top_level(dest, [f"{v}^{{tree}}" for v in versions])
    clock = itertools.count(1700000000)       # a second apart, in the order they are made
    replay("older", "older", trees[0], {**marks, "perf-changelog.yaml": "older"})
    for n, entries in enumerate(trees):
        replay(f"v{n}", f"version {n}", entries, marks)
        if n < len(versions) - 1:
            blob(f"r{n}", f"readme {n}\n".encode())
            replay(f"d{n}", "docs", entries, {**marks, "README.md": f"r{n}"})
    exported = dest / ".git" / "replayed-marks"
    subprocess.run(["git", "-C", str(dest), "fast-import", "--quiet", f"--export-marks={exported}"], input=bytes(stream),
                   capture_output=True, check=True)
    ids = dict(line.split() for line in exported.read_text().splitlines())
    exported.unlink()
    parent, first = ids[f":{mark(f'v{len(versions) - 1}')}"], ids[f":{mark('v0')}"]
    sh("git", "-C", str(dest), "checkout", "-q", "-B", "main", parent)
    sh("git", "-C", str(dest), "branch", "-q", "-D", "replayed")
    return parent, first


def webhooks_checkout(corpus: Path, dest: Path) -> str:
    root = dest / PINS["github-webhooks"]["root"]
    shutil.copytree(corpus / "github-webhooks", root, ignore=shutil.ignore_patterns("LICENSE"))
    shutil.copy(corpus / "github-webhooks" / "LICENSE", dest / "LICENSE")
    sh("git", "init", "-q", str(dest))
    sh("git", "-C", str(dest), "add", "-A")
    sh("git", "-C", str(dest), "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-q", "-m", "examples")
    return sh("git", "-C", str(dest), "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def hosted():
    """The workspace after the checkout steps, owned by the unprivileged user; no ../shared."""
    if os.geteuid() != 0:
        pytest.fail("this test runs the job's steps as another, unprivileged user: run it as root (CI does)")
    shared = rt.SHARED
    if not (shared / "corpus").is_dir():
        pytest.fail(f"the shared corpus is missing: expected {shared}/corpus (set CI_TOOLS_SHARED to its folder)")
    base = Path(tempfile.mkdtemp(prefix="cit-hosted-", dir="/tmp"))
    ws = base / "work" / "ci-tools" / "ci-tools"                 # $GITHUB_WORKSPACE, as on a hosted runner
    (ws / ".ci").mkdir(parents=True)
    shutil.copy(REPO / ".ci" / "corpus.py", ws / ".ci" / "corpus.py")
    corpus = shared / "corpus"
    head, first = inferencex_checkout(corpus, ws / ".corpus" / "inferencex")
    hooks = webhooks_checkout(corpus, ws / ".corpus" / "webhooks")
    # The checkouts' commits are this simulation's, not GitHub's: the pins name them; nothing else changes.
    pins = copy.deepcopy(PINS)
    pins["inferencex"]["commit"], pins["github-webhooks"]["commit"] = head, hooks
    pins["inferencex-history"]["first"] = first[:9]
    (ws / ".ci" / "corpus.json").write_text(json.dumps(pins))
    # .ci/run stands in for itself: it records who ran it, from where, with what beside the checkout.
    (ws / ".ci" / "run").write_text('#!/usr/bin/env bash\nset -eu\ncd "$(dirname "$0")/.."\n'
                                    'printf "%s %s %s\\n" "$(id -u)" "${CI_TOOLS_SHARED:-unset}" "$PWD" > ran\n'
                                    'test -f ../shared/corpus/inferencex/SOURCE_COMMIT\n')
    tools = base / "bin"
    tools.mkdir()
    # sudo records what it is asked and runs it (as the same user: this test cannot grant root)
    (tools / "sudo").write_text('#!/bin/sh\necho "sudo $*" >> "$SUDO_LOG"\n'
                                'while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done\nexec "$@"\n')
    (tools / "sudo").chmod(0o755)
    home = base / "home"
    home.mkdir()
    sh("chmod", "-R", "u+w", str(base))                  # a checkout's files are writable (the corpus's are not)
    sh("chown", "-R", f"{NOBODY}:{NOBODY}", str(base))
    base.chmod(0o755)
    yield {"base": base, "ws": ws, "tools": tools, "home": home, "shared": ws.parent / "shared"}
    shutil.rmtree(base, ignore_errors=True)


def run_as_runner(hosted, step: dict) -> subprocess.CompletedProcess:
    """One `run:` step as the hosted runner's user runs it (unprivileged, HOME of its own, bash -e)."""
    # the system python3 stands in for setup-python's (this test's own lives under /root, closed to others)
    env = {"PATH": f"{hosted['tools']}{os.pathsep}/usr/bin:/bin",
           "HOME": str(hosted["home"]), "CI": "true", "GITHUB_ACTIONS": "true", "SUDO_LOG": str(hosted["base"] / "sudo.log"),
           "GITHUB_WORKSPACE": str(hosted["ws"]), "RUNNER_TEMP": str(hosted["base"])}
    script = gh_expr.interpolate(step["run"], {"github": {}, "runner": {"temp": str(hosted["base"])}})
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=hosted["ws"], env=env, capture_output=True, text=True, timeout=300)


def step(step_id: str) -> dict:
    return next(s for s in JOB["steps"] if s.get("id") == step_id)


@pytest.mark.parametrize("text, said", [
    ('{"inferencex": {"commit": "a"},\n  oops', "corpus.json:2:3: not valid JSON"),
    ('{"inferencex": {}, "github-webhooks": {}}', "no inferencex-history pin"),
    ("[]", "no inferencex, inferencex-history, github-webhooks pin"),
])
def test_a_broken_pins_file_is_named_without_a_traceback(tmp_path, text, said):
    (tmp_path / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "corpus.py", tmp_path / ".ci" / "corpus.py")
    (tmp_path / ".ci" / "corpus.json").write_text(text)
    done = subprocess.run([sys.executable, str(tmp_path / ".ci" / "corpus.py"), "--inferencex", str(tmp_path),
                           "--webhooks", str(tmp_path), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert done.returncode == 1 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_pin_that_does_not_hold_stops_the_corpus_step(hosted, tmp_path):
    work = tmp_path / "ws"
    shutil.copytree(hosted["ws"] / ".ci", work / ".ci")
    pins = json.loads((work / ".ci" / "corpus.json").read_text())
    pins["inferencex-history"]["first"] = "000000000"
    (work / ".ci" / "corpus.json").write_text(json.dumps(pins))
    src = hosted["ws"] / ".corpus"        # this module's first use of the checkouts (the corpus step removes them)
    done = subprocess.run([sys.executable, str(work / ".ci" / "corpus.py"), "--inferencex", str(src / "inferencex"),
                           "--webhooks", str(src / "webhooks"), "--out", str(tmp_path / "shared")], capture_output=True, text=True,
                          env={**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
                               "GIT_CONFIG_VALUE_0": "*"})
    assert done.returncode == 1 and "pins 000000000" in done.stderr and not (tmp_path / "shared").exists()


def test_the_corpus_step_lays_out_the_corpus_the_developers_have(hosted, shared):
    assert not hosted["shared"].exists()
    done = run_as_runner(hosted, step("corpus"))
    assert done.returncode == 0, done.stderr
    assert not (hosted["ws"] / ".corpus").exists(), "the checkouts are removed before the tests run"
    made, have = hosted["shared"] / "corpus", shared / "corpus"
    # exactly the parts a test may read beside the checkout (tests/public_clone.py)
    assert sorted(p.name for p in made.iterdir()) == sorted(public_clone.public_parts(PINS))
    # SOURCE_COMMIT names the checkout's commit: this simulation's here, the pin on GitHub
    pinned = json.loads((hosted["ws"] / ".ci" / "corpus.json").read_text())["inferencex"]["commit"]
    assert (made / "inferencex" / "SOURCE_COMMIT").read_text() == pinned
    for folder in ("inferencex", "github-webhooks"):
        cmp = filecmp.dircmp(made / folder, have / folder, ignore=["SOURCE_COMMIT"])
        assert _differences(cmp) == [], f"{folder}: differs from the developers' corpus"
    bundle = PINS["inferencex-history"]["bundle"]
    assert bundle_log(made / "inferencex-history" / bundle, "%T") == bundle_log(have / "inferencex-history" / bundle, "%T")


def _differences(cmp: filecmp.dircmp) -> list[str]:
    out = [f"only made: {n}" for n in cmp.left_only] + [f"only had: {n}" for n in cmp.right_only]
    out += [f"unreadable: {n}" for n in cmp.funny_files]
    _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
    out += [f"differs: {cmp.left}/{n}" for n in mismatch + errors]
    return out + [d for sub in cmp.subdirs.values() for d in _differences(sub)]


def test_the_tests_that_read_the_corpus_pass_against_the_one_it_laid_out(hosted):
    if not hosted["shared"].exists():
        assert run_as_runner(hosted, step("corpus")).returncode == 0
    # A quick sample of each part's readers (the whole suite runs in .ci/run); the golden verdicts of
    # the history key on InferenceX's commit ids, which this simulation's history cannot have.
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/changelog/test_corpus.py", "-k", "sampled or test_event or masters",
                           "tests/github/test_gh_events.py", "tests/config/test_selected_masters.py"],
                          cwd=REPO, env={**os.environ, "CI_TOOLS_SHARED": str(hosted["shared"])},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout and "deselected" in done.stdout


def test_the_tests_step_runs_ci_run_through_sudo_beside_the_corpus(hosted):
    if not hosted["shared"].exists():
        assert run_as_runner(hosted, step("corpus")).returncode == 0
    done = run_as_runner(hosted, step("tests"))
    assert done.returncode == 0, done.stderr
    assert (hosted["base"] / "sudo.log").read_text().startswith("sudo --preserve-env=CI,GITHUB_ACTIONS env PATH=")
    uid, shared, where = (hosted["ws"] / "ran").read_text().split()
    assert shared == "unset" and where == str(hosted["ws"])     # ../shared found beside the checkout


# ---- dev.py installs what is missing through sudo where it is not root ------------------------------

APT = '#!/bin/sh\necho "apt-get $* as $(id -u)" >> "$SUDO_LOG"\n' \
      'case "$*" in *install*) printf "#!/bin/sh\\n" > "$FAKE_BIN/cit-slurmd"; chmod +x "$FAKE_BIN/cit-slurmd";; esac\n'


def ensure_as(hosted, tmp: Path, sudo: bool) -> subprocess.CompletedProcess:
    """dev.py's install of a missing program (Slurm's, say), run by the unprivileged user with an
    apt-get that records its calls (and `installs` the program), with or without sudo on PATH."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "apt-get").write_text(APT)
    if sudo:
        shutil.copy(hosted["tools"] / "sudo", bin_dir / "sudo")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    log = tmp / "calls.log"
    code = (f"import sys; sys.path.insert(0, {str(tmp)!r}); import dev; "
            "dev.ensure_apt((dev.AptNeed(('slurm-wlm', 'munge'), ('cit-slurmd',), 'Slurm tests'),)); print('ok')")
    shutil.copy(REPO / "dev.py", tmp / "dev.py")
    sh("chown", "-R", f"{NOBODY}:{NOBODY}", str(tmp))
    tmp.chmod(0o777)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(hosted["home"]), "SUDO_LOG": str(log),
           "FAKE_BIN": str(bin_dir), "CI_TOOLS_VENV": str(tmp / "venv")}
    done = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                           "/usr/bin/python3", "-c", code], env=env, capture_output=True, text=True, timeout=60)
    done.calls = log.read_text().splitlines() if log.exists() else []
    return done


def test_dev_py_installs_through_sudo_when_not_root(hosted):
    tmp = Path(tempfile.mkdtemp(prefix="cit-sudo-", dir="/tmp"))
    try:
        done = ensure_as(hosted, tmp, sudo=True)
        assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr
        assert done.calls[0] == "sudo -n true"
        assert "sudo -n env DEBIAN_FRONTEND=noninteractive apt-get update -q" in done.calls
        assert any(c.startswith("sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
                                "--no-install-recommends slurm-wlm munge") for c in done.calls)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_dev_py_without_root_or_sudo_says_how_to_install(hosted):
    tmp = Path(tempfile.mkdtemp(prefix="cit-nosudo-", dir="/tmp"))
    try:
        done = ensure_as(hosted, tmp, sudo=False)
        assert done.returncode == 1 and "passwordless sudo" in done.stderr and "Traceback" not in done.stderr
        assert done.calls == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
