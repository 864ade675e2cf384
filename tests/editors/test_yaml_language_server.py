"""What editors show: the real yaml-language-server (npm, installed by dev.py) on the shipped files.

Every YAML file that names its schema in a `# yaml-language-server: $schema=` first line must show
no error at all (a false error teaches people to ignore the squiggles), and a broken copy of each
kind must show the error a reviewer would point at, on its line.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .yls import Server

ROOT = Path(__file__).resolve().parents[2]
MODELINE = "# yaml-language-server: $schema="


def _binary() -> Path:
    path = Path(os.environ.get("CI_TOOLS_YLS", ROOT / ".venv" / "yaml-language-server" / "node_modules" / ".bin"
                                / "yaml-language-server"))
    if not path.exists():
        pytest.fail(f"yaml-language-server not found at {path}: `python3 dev.py test` installs it (needs npm)")
    return path


@pytest.fixture(scope="module")
def server():
    s = Server(_binary(), ROOT)
    yield s
    s.close()


def _shipped() -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                          "*.yaml", "*.yml"], capture_output=True, check=True).stdout
    files = [p.decode() for p in out.split(b"\0") if p]
    return sorted(f for f in files if (ROOT / f).is_file() and (ROOT / f).read_text().startswith(MODELINE))


def test_the_shipped_files_name_their_schema():
    shipped = _shipped()
    for must in ("inferencex-e2e/ci-policy.yaml", "inferencex-e2e/configs/runners.yaml",
                 "inferencex-e2e/configs/nvidia-master.yaml", "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"):
        assert must in shipped


@pytest.fixture(scope="module")
def shipped_diagnostics(server) -> dict[str, list[dict]]:
    """Every shipped file's diagnostics, asked for together (the server's quiet second waited once)."""
    found = server.diagnose_many([(ROOT / rel, None) for rel in _shipped()])
    return {str(path.relative_to(ROOT)): diagnostics for path, diagnostics in found.items()}


@pytest.mark.parametrize("rel", _shipped())
def test_no_errors_on_a_shipped_file(shipped_diagnostics, rel):
    found = shipped_diagnostics[rel]
    assert [(d["range"]["start"]["line"] + 1, d["message"]) for d in found] == []


BROKEN = [
    # (file, old (None: an entry appended), new, words of the message the edited line must show)
    ("inferencex-e2e/configs/runners.yaml", "available-cpu-dram-mib: 2964436", "available-cpu-dram-mib: 2_964_436",
     'Incorrect type. Expected "integer".'),
    ("recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml", "synthetic-acceptance: 3.51", "synthetic-acceptanse: 3.51",
     "Property synthetic-acceptanse is not allowed."),
    ("inferencex-e2e/ci-policy.yaml", "scope: trimmed", "scope: partial", "Value is not accepted."),
    ("inferencex-e2e/perf-changelog.yaml", None, "- config-keys: [a]\n  description: one string\n  pr-link: XXX\n",
     'Incorrect type. Expected "array".'),
]


def _broken(rel: str, old: str | None, new: str) -> tuple[str, int]:
    """The broken copy's text and the 1-based line its error belongs on."""
    text = (ROOT / rel).read_text()
    if old is None:
        text = text + ("\n" if text.strip() else "") + new
        return text, text.count("\n", 0, text.index(new)) + 2  # the description line of the appended entry
    assert old in text, f"{rel} no longer contains {old!r}; update this case"
    return text.replace(old, new, 1), text.count("\n", 0, text.index(old)) + 1


@pytest.fixture(scope="module")
def broken_diagnostics(server) -> dict[str, list[dict]]:
    """Each broken copy's diagnostics, asked for together (one case per file, so they do not interfere).
    A copy is sent as the original's new text: where the original is, the modeline's relative
    $schema path resolves."""
    assert len({rel for rel, *_ in BROKEN}) == len(BROKEN), "one broken case per file"
    found = server.diagnose_many([(ROOT / rel, _broken(rel, old, new)[0]) for rel, old, new, _ in BROKEN])
    return {str(path.relative_to(ROOT)): diagnostics for path, diagnostics in found.items()}


@pytest.mark.parametrize("rel,old,new,words", BROKEN, ids=[b[0] for b in BROKEN])
def test_expected_errors_on_broken_copies(broken_diagnostics, rel, old, new, words):
    _, line = _broken(rel, old, new)
    found = broken_diagnostics[rel]
    assert any(d["message"].startswith(words) and d["range"]["start"]["line"] + 1 == line for d in found), found


# Values YAML 1.1 reads as booleans or numbers and YAML 1.2 (this server, the shipped schema) as text:
# the changelog gate refuses each on the same line the editor marks (issue 25, finding 7).
YAML11_ONLY = [("  evals-only: yes", 'Incorrect type. Expected "boolean".'),
               ("  all-evals: on", 'Incorrect type. Expected "boolean".'),
               ("  append-only: OFF", 'Incorrect type. Expected "boolean".'),
               ("  eval-min-prefill-ep: 1_0", 'Incorrect type.')]


@pytest.mark.parametrize("line,words", YAML11_ONLY, ids=[c[0].strip() for c in YAML11_ONLY])
def test_the_editor_and_the_changelog_gate_refuse_yaml_1_1_values_on_the_same_line(server, line, words):
    from ci_tools.changelog.lint import Mode, lint_change

    rel = "inferencex-e2e/perf-changelog.yaml"
    base = (ROOT / rel).read_text()
    new = "- config-keys:\n    - dsv4-fp4-b200-vllm-agentic-mtp\n  description:\n    - \"x\"\n  pr-link: XXX\n" + line + "\n"
    text = base + "\n" + new
    at = text.count("\n", 0, text.index(line)) + 1
    found = server.diagnose(ROOT / rel, text=text)
    editor = {d["range"]["start"]["line"] + 1 for d in found if d["message"].startswith(words)}
    result = lint_change(base.encode(), text.encode(), file=rel, mode=Mode("SemiAnalysisAI/InferenceX", pr=1),
                         master_keys=None)
    assert (editor, [f.line for f in result.errors]) == ({at}, [at]), (found, result.errors)
