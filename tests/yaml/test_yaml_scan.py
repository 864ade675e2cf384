"""`ci_tools.yaml.scan`: the one top-level key scanner (changelog keys, planner entry blocks)."""

from __future__ import annotations

import pytest
import yaml

from ci_tools.yaml.scan import has_alias_syntax, split_entries, top_level_keys


@pytest.mark.parametrize("content,keys", [
    (b"# c\na:\n  x: 1\n\nb-1.2:   # note\n  - y\n", ["a", "b-1.2"]),
    (b"", []),
    (b"a: {x: 1}\n", None),        # value on the key line: not the plain shape
    (b"'a':\n  x: 1\n", None),     # quoted key
    (b"---\na:\n  x: 1\n", None),  # document marker
    (b"a:\n  x: 1\na:\n  y: 2\n", None),  # duplicate: the full parser reports it
    (b"- a\n", None),
])
def test_top_level_keys(content, keys):
    assert top_level_keys(content) == keys


@pytest.mark.parametrize("content", [
    b"# c\na:\n  x: 1\n\nb:\n  y: [1, 2]\n# tail\n",
    b"a:\n  x: &x 1\nb:\n  y: *x\n",
    b"a:\n  # rocm/sgl-dev:*-DSv4\n  x: 1\n",
])
def test_split_entries_agree_with_the_keys_and_the_parser(content):
    """Keys and blocks come from one scan: same keys in the same order, each block parses to its entry."""
    whole = yaml.safe_load(content)
    assert top_level_keys(content) == list(whole)
    parts = split_entries(content)
    if has_alias_syntax(content):
        assert parts is None  # an alias may cross entries: the caller parses the file whole
        return
    assert [k for k, _, _ in parts] == list(whole)
    for key, line, chunk in parts:
        assert content.split(b"\n")[line - 1].startswith(key.encode() + b":")
        assert yaml.safe_load(chunk) == {key: whole[key]}
