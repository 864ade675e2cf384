"""Fuzz tier: `config validate` through the real CLI on the example repository's master, with hostile
values, hostile entries and raw byte edits; exit 0, 1 or 2 only, never a traceback or a hang."""

from __future__ import annotations

import functools
from pathlib import Path

from hypothesis import given, strategies as st

from .harness import cli_case, fuzz_settings
from .hostile import block_fragment, byte_edit, flow_value, mutate_bytes

ROOT = Path(__file__).resolve().parents[2]
MASTER = ROOT / "inferencex-e2e/configs/nvidia-master.yaml"
RUNNERS = ROOT / "inferencex-e2e/configs/runners.yaml"


@functools.cache
def master() -> bytes:
    return MASTER.read_bytes()


@st.composite
def hostile_master(draw) -> bytes:
    text = master()
    kind = draw(st.integers(0, 3))
    if kind == 0:  # a field's value replaced
        lines = text.split(b"\n")
        idx = [i for i, line in enumerate(lines) if line.startswith(b"  ") and b": " in line and not line.startswith(b"   ")]
        i = draw(st.sampled_from(idx))
        key = lines[i].split(b":", 1)[0]
        lines[i] = key + b": " + draw(flow_value()).encode("utf-8", "surrogatepass")
        return b"\n".join(lines)
    if kind == 1:  # a hostile entry appended
        body = draw(block_fragment(indent="  "))
        return text + b"\nhostile-entry:\n  scenarios:\n" + body.encode("utf-8", "surrogatepass")
    if kind == 2:  # a hostile top-level value
        return text + b"\nhostile: " + draw(flow_value()).encode("utf-8", "surrogatepass") + b"\n"
    return mutate_bytes(text, draw(st.lists(byte_edit, min_size=1, max_size=3)))


@fuzz_settings(50)
@given(hostile_master(), st.sampled_from(["text", "json", "github"]))
def test_fuzz_config_validate(tmp_path_factory, content, fmt):
    path = tmp_path_factory.mktemp("cfg") / "nvidia-master.yaml"
    path.write_bytes(content)
    cli_case("config-validate", ["config", "validate", "--master", str(path), "--runners", str(RUNNERS),
                                 "--format", fmt])
