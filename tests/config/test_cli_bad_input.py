"""Bad input through the real `ci-tools` entry point: a clear, located message and the right exit
code for each, never a traceback. Each case edits a scratch copy of the repository's example data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run

from ci_tools import names

MASTER = names.CONFIGS_DIR + "/nvidia-master.yaml"
RECIPE = names.RECIPES_DIR + "/gb300-dsv41flash-fp4-sglang/agentic.yaml"
SEED = "dsv41flash-fp4-gb300-sglang-agentic-dspark"


B300_RECIPE = "recipes/b300-dsv41flash-fp4-sglang/fixed-seq.yaml"


def _edit(root: Path, rel: str, old: str, new: str, count: int = 1) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def _write(root: Path, rel: str, text: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))


def _prepend(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.write_bytes(data + path.read_bytes())


# id, how to break the scratch repo, extra args, exit code, expected output fragment
CASES = [
    ("malformed-yaml", lambda r: _edit(r, MASTER, "  model-prefix: dsv41flash\n", "  model-prefix: [dsv41flash\n"),
     [], 1, f"{MASTER}:15:9: error: malformed YAML"),
    ("duplicate-key", lambda r: _edit(r, MASTER, "  precision: fp4\n", "  precision: fp4\n  precision: fp8\n"),
     [], 1, "duplicate key 'precision' (first written at line 16)"),
    ("tab", lambda r: _edit(r, MASTER, "  runner: b300\n", "  runner:\tb300\n"), [], 1, "a TAB character is not allowed"),
    ("bom", lambda r: _prepend(r, MASTER, "\ufeff".encode()), [], 1,
     f"{MASTER}:1:1: error: the file starts with a byte-order mark (BOM)"),
    ("nul", lambda r: _edit(r, MASTER, "  runner: b300\n", "  runner: b300\x00\n"), [], 1, "a NUL byte is not allowed"),
    ("not-utf8", lambda r: _edit(r, MASTER, "  runner: b300\n", "  runner: b\u00e9300\n") or
     (r / MASTER).write_bytes((r / MASTER).read_bytes().replace("é".encode(), b"\xe9")), [], 1, "not valid UTF-8"),
    ("too-large", lambda r: _write(r, names.CONFIGS_DIR + "/amd-master.yaml", "# pad\n" * 1_500_000), [], 1,
     f"{names.CONFIGS_DIR}/amd-master.yaml: error: more than 8,388,608 bytes, the limit for one YAML file"),
    ("wrong-type", lambda r: _edit(r, MASTER, "{ tp: 4, ep: 1, conc-start: 4", "{ tp: \"4\", ep: 1, conc-start: 4"),
     [], 1, "'tp' must be an integer, got string '4'\n  hint: write 4 without quotes"),
    ("unknown-field", lambda r: _edit(r, MASTER, "  precision: fp4\n", "  precison: fp4\n  precision: fp4\n"),
     [], 1, "dsv41flash-fp4-b300-sglang: unknown field 'precison'\n  hint: did you mean 'precision'?"),
    ("root-not-mapping", lambda r: _write(r, names.CONFIGS_DIR + "/amd-master.yaml", "- just\n- a list\n"),
     [], 1, "a master config must be a mapping of config key -> entry, got a list"),
    ("empty-master", lambda r: _write(r, names.CONFIGS_DIR + "/amd-master.yaml", "# nothing yet\n"),
     [], 1, "the master config is empty"),
    ("no-masters-dir", lambda r: [p.unlink() for p in (r / names.CONFIGS_DIR).glob("*-master.yaml")],
     [], 1, "no master configs found"),
    ("runners-empty", lambda r: _write(r, names.RUNNERS, "# nothing\n"), [], 1,
     f"{names.RUNNERS}: error: the file must contain a mapping, got null (empty)"),
    ("recipe-a-list", lambda r: _write(r, RECIPE, "- tp: 4\n"), [], 1,
     f"{RECIPE}:1:1: error: the file must contain a mapping, got a list"),
    ("runners-missing", lambda r: (r / names.RUNNERS).unlink(), [], 1, f"{names.RUNNERS}: error: runners file not found"),
    ("runner-label-undeclared", lambda r: _edit(r, MASTER, "  runner: b300\n", "  runner: b300-typo\n"),
     [], 1, "runner label 'b300-typo' is not declared in inferencex-e2e/configs/runners.yaml"),
    ("recipe-missing", lambda r: (r / RECIPE).unlink(), [], 1, f"{MASTER}:90:3: error: recipe {RECIPE} does not exist"),
    ("config-file-missing", lambda r: _edit(r, MASTER, "        decode: { num-worker: 2, tp: 4, ep: 4, dp-attn: true }\n",
                                             "        decode: { num-worker: 2, tp: 4, ep: 4, dp-attn: true,\n"
                                             "                  additional-settings: [\"CONFIG_FILE=recipes/nope.yaml\"] }\n"),
     [], 1, "CONFIG_FILE setting recipes/nope.yaml does not exist"),
    ("recipe-wrong-type", lambda r: _edit(r, RECIPE, "synthetic-acceptance: 3.51", "synthetic-acceptance: high"),
     [], 1, f"{RECIPE}:34:1: error: 'synthetic-acceptance' must be a number (or left out), got string 'high'"),
    ("recipe-unknown-point-field", lambda r: _edit(r, RECIPE, "    conc: 4\n", "    conc: 4\n    concurrency: 4\n"),
     [], 1, "points.tp4-c4: unknown field 'concurrency'"),
    ("recipe-image-unpinned-touched", lambda r: _edit(r, RECIPE, "@sha256:97d98d5b", "@sha256:XYZ", 1),
     ["--changed-key", SEED], 1, "recipe image: its digest is not sha256 followed by 64 lowercase hex characters"),
    ("master-image-unpinned-touched", lambda r: _edit(r, MASTER, "e6072935@sha256:97d98d5b93ead33502f22d93fc77edd9074aa523273bceb8cc00c8464bb5c85b\n  model: deepseek-ai/DeepSeek-V4.1-Flash\n  model-prefix: dsv41flash\n  runner: b300",
                                                       "e6072935\n  model: deepseek-ai/DeepSeek-V4.1-Flash\n  model-prefix: dsv41flash\n  runner: b300"),
     ["--changed-key", "dsv41flash-fp4-b300-*"], 1, "image of dsv41flash-fp4-b300-sglang (touched by this change): it is not pinned by digest"),
    ("wildcard-key", lambda r: _edit(r, MASTER, "dsv41flash-fp4-b300-sglang:\n", "dsv41flash-fp4-b300-*:\n"),
     [], 1, "config key 'dsv41flash-fp4-b300-*' contains '*'"),
    ("missing-master-file", lambda r: None, ["--master", "no/such/file.yaml"], 2, "does not exist"),
    ("missing-root-dir", lambda r: None, ["--root", "no/such/dir"], 2, "does not exist"),
    ("bad-format", lambda r: None, ["--format", "xml"], 2, "'xml' is not one of 'text', 'json', 'github'"),
    ("bad-base", lambda r: None, ["--base", "no-such-ref"], 2, "--base no-such-ref: not a commit"),
]


@pytest.mark.parametrize("breaker,args,code,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(scratch, breaker, args, code, expected):
    breaker(scratch)
    res = run(["config", "validate", *args], cwd=scratch)
    text = res.out + res.err
    assert res.code == code, text
    assert expected in text, text
    assert "Traceback" not in text and "internal error" not in text


def test_unpinned_but_untouched_is_only_a_warning(scratch):
    _edit(scratch, MASTER, "e6072935@sha256:97d98d5b93ead33502f22d93fc77edd9074aa523273bceb8cc00c8464bb5c85b\n  model: "
          "deepseek-ai/DeepSeek-V4.1-Flash\n  model-prefix: dsv41flash\n  runner: b300",
          "e6072935\n  model: deepseek-ai/DeepSeek-V4.1-Flash\n  model-prefix: dsv41flash\n  runner: b300")
    _edit(scratch, B300_RECIPE, "e6072935@sha256:97d98d5b93ead33502f22d93fc77edd9074aa523273bceb8cc00c8464bb5c85b",
          "e6072935")
    res = run(["config", "validate", "--format", "json"], cwd=scratch)
    assert res.code == 0, res.out
    body = json.loads(res.out)
    assert body["ok"] is True and body["errors"] == []
    assert [w["message"] for w in body["warnings"]] == [
        "1 entry in this file uses an image without a @sha256 digest: dsv41flash-fp4-b300-sglang (line 12)",
        "recipe image: it is not pinned by digest"]


def test_json_shape_and_github_annotation(scratch):
    _edit(scratch, MASTER, "  runner: b300\n", "  runner: b300-typo\n")
    body = json.loads(run(["config", "validate", "--format", "json"], cwd=scratch).out)
    assert set(body) >= {"ok", "errors", "warnings"}
    assert body["ok"] is False
    (err,) = body["errors"]
    assert {k: err[k] for k in ("file", "line", "col")} == {"file": MASTER, "line": 15, "col": 3}
    gh = run(["config", "validate", "--format", "github"], cwd=scratch).out
    assert f"::error file={MASTER},line=15,col=3,title=config validate::dsv41flash-fp4-b300-sglang: runner label 'b300-typo'" in gh


def test_subprocess_entry_point_exit_codes(scratch):
    ok = subprocess.run([sys.executable, "-m", "ci_tools", "config", "validate"], cwd=scratch, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "0 error(s), 0 warning(s)" in ok.stdout
    _edit(scratch, MASTER, "  runner: b300\n", "  runner: b300-typo\n")
    bad = subprocess.run([sys.executable, "-m", "ci_tools", "config", "validate"], cwd=scratch, capture_output=True, text=True)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
