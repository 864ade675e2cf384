"""The suite runs from a public clone: beside the checkout it may read only what .ci/corpus.py rebuilds from
public repositories (tests/public_clone.py), and a test that reads anything else of ../shared fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import public_clone
from tests.conftest import REPO

PARTS = frozenset({"inferencex", "inferencex-history", "github-webhooks"})


def test_the_public_parts_are_what_corpus_json_pins():
    assert public_clone.public_parts(json.loads((REPO / ".ci" / "corpus.json").read_text())) == PARTS


@pytest.mark.parametrize("rel, private", [
    ("corpus/inferencex/configs/nvidia-master.yaml", False),
    ("corpus/inferencex-history/perf-changelog-history.bundle", False),
    ("corpus/github-webhooks/pull_request/labeled.payload.json", False),
    ("corpus", False),                                   # listing the folder that holds the parts
    ("corpus/nvidia-smi-h200/telemetry-load.csv", True),  # a developer's copy no pin rebuilds
    ("corpus/aiperf-0.13-export", True),
    ("corpus/inferencex-extra/x", True),                 # a part's name as a prefix is no part
    ("reference/gpu-smoke/runs/fixed-c16/result.json", True),
    ("reference/github-merge-group/checks_requested.payload.json", True),
    ("reference/runner-reality.md", True),
    ("README.md", True),
])
def test_what_lies_outside_the_rebuilt_parts(rel, private):
    root = "/x/shared"
    assert public_clone.private_part(f"{root}/{rel}", root, PARTS) == (rel if private else None)


@pytest.mark.parametrize("path", ["/x/shared", "/x/shared-old/reference/a", "/x/other/reference/a", "/x"])
def test_nothing_outside_shared_is_its_business(path):
    assert public_clone.private_part(path, "/x/shared", PARTS) is None


TESTS = '''
import os, subprocess, pytest
from pathlib import Path

SHARED = Path(os.environ["CI_TOOLS_SHARED"])


def test_reads_a_public_part():
    assert (SHARED / "corpus/inferencex/master.yaml").read_text() == "ok"
    assert os.listdir(SHARED / "corpus/github-webhooks") == []


def test_reads_the_reference_folder():
    (SHARED / "reference/gpu-smoke/runs/README.md").read_text()


def test_reads_a_missing_file_there():
    with pytest.raises(FileNotFoundError):
        open(SHARED / "reference/gone.json")


def test_lists_an_unpinned_corpus_folder():
    sorted((SHARED / "corpus/nvidia-smi-h200").iterdir())


def test_hands_it_to_a_program():
    subprocess.run(["true", f"--telemetry={SHARED}/reference/gpu-smoke/runs"], check=True)


def test_reaches_it_by_a_relative_path(monkeypatch):
    monkeypatch.chdir(SHARED / "corpus")
    open("../reference/gpu-smoke/runs/README.md").close()


@pytest.fixture
def recording():
    return (SHARED / "reference/gpu-smoke/runs/README.md").read_text()


def test_has_a_fixture_that_reads_it(recording):
    pass
'''


def test_a_test_that_reads_beside_the_clone_fails_naming_the_file(tmp_path: Path):
    """The plug-in in a pytest of its own, over a ../shared laid out here: each way of reading a private file
    fails its test (in the phase that read it), a public part does not, nor a test that reads nothing."""
    shared = tmp_path / "shared"
    for rel, text in {"corpus/inferencex/master.yaml": "ok", "reference/gpu-smoke/runs/README.md": "",
                      "corpus/nvidia-smi-h200/README.md": ""}.items():
        (shared / rel).parent.mkdir(parents=True, exist_ok=True)
        (shared / rel).write_text(text)
    (shared / "corpus/github-webhooks").mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_reads.py").write_text(TESTS)
    (tmp_path / "test_module_reads.py").write_text(
        f"from pathlib import Path\nDATA = Path({str(shared)!r}, 'reference', 'gpu-smoke', 'runs', 'README.md').read_text()\n"
        "def test_nothing():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.public_clone", "-p", "no:cacheprovider",
                           "-c", str(tmp_path / "pytest.ini"), "-vv", "-rfE", "--continue-on-collection-errors", "test_reads.py", "test_module_reads.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CI_TOOLS_SHARED": str(shared), "PYTHONPATH": str(REPO)})
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    failed = {line.split(" - ")[0].split()[-1].split("::")[-1]: line for line in out.splitlines()
              if line.startswith(("FAILED", "ERROR"))}
    assert set(failed) == {"test_reads_the_reference_folder", "test_reads_a_missing_file_there",
                           "test_lists_an_unpinned_corpus_folder", "test_hands_it_to_a_program",
                           "test_reaches_it_by_a_relative_path", "test_has_a_fixture_that_reads_it",
                           "test_module_reads.py"}, out
    assert "opens ../shared/reference/gpu-smoke/runs/README.md: a public clone has beside it only what " \
           ".ci/corpus.py rebuilds" in failed["test_reads_the_reference_folder"]
    assert "lists ../shared/corpus/nvidia-smi-h200" in failed["test_lists_an_unpinned_corpus_folder"]
    assert "hands a program ../shared/reference/gpu-smoke/runs" in failed["test_hands_it_to_a_program"]
    assert failed["test_has_a_fixture_that_reads_it"].startswith("ERROR")       # its setup, not its body
    assert "1 passed" in out and "test_reads_a_public_part PASSED" in out
