"""Hostile YAML (issue 15, items 9 and 11): every case is refused with a located message, and the
refusal costs no more than the input's length (aliases are never expanded past the budget)."""

from __future__ import annotations

import pytest

from ci_tools.yaml import located
from ci_tools.errors import InputError
from ci_tools.yaml.located import load_yaml_text
from ci_tools.yaml.fast import load_data_fast


def bomb(levels: int, width: int = 9) -> str:
    """A "billion laughs": each level lists `width` aliases of the previous one."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


HOSTILE = [
    (bomb(7), None, "aliases expand"),                          # 460 bytes, 4.8 M values if expanded
    ("a: &r [*r]\n", 1, "recursive alias"),
    ("a: &r {b: *r}\n", 1, "recursive alias"),
    ("a: " + "[" * 330 + "]" * 330 + "\n", 1, "nested more than"),
    ("a:\n" + "".join("  " * i + f"- k{i}:\n" for i in range(1, 80)), None, "nested more than"),
    ("a: 0x_\n", 1, "cannot read the value '0x_'"),
    ("a: 0b_\n", 1, "cannot read the value '0b_'"),
    ("a: 2024-13-45\n", 1, "cannot read the value '2024-13-45'"),
    ("a: !!set {x, y}\n", 1, "!!set is not supported on a list or mapping"),
    ("a: !custom [1]\n", 1, "!custom is not supported"),
    ("a: !!omap [{x: 1}]\n", 1, "!!omap is not supported"),
    ("? !!set {k}\n: v\n", 1, None),                            # a tagged collection as a key
]


@pytest.mark.parametrize("text,line,fragment", HOSTILE)
def test_hostile_yaml_is_refused_with_a_location(text, line, fragment):
    with pytest.raises(InputError) as info:
        load_yaml_text(text, "f.yaml")
    finding = info.value.findings[0]
    assert finding.file == "f.yaml"
    if line is not None:
        assert finding.line == line
    if fragment is not None:
        assert fragment in finding.message


@pytest.mark.parametrize("text,line,fragment", HOSTILE)
def test_the_fast_loader_refuses_the_same(text, line, fragment):
    with pytest.raises(InputError):
        load_data_fast(text, "f.yaml")


def test_the_alias_budget_is_checked_before_anything_is_built(monkeypatch):
    built = []
    monkeypatch.setattr(located._Builder, "build", lambda self, node, path: built.append(node))
    with pytest.raises(InputError, match="aliases expand"):
        load_yaml_text(bomb(7), "f.yaml")
    assert built == []


def test_ordinary_aliases_and_merge_keys_still_work():
    text = ("defaults: &d {image: x, tp: 8}\n"
            + "".join(f"e{i}:\n  <<: *d\n  conc: {i}\n" for i in range(200)))
    data = load_yaml_text(text, "f.yaml").data
    assert data["e7"] == {"image": "x", "tp": 8, "conc": 7}
    assert load_data_fast(text, "f.yaml") == data


def test_depth_limit_leaves_real_nesting_alone():
    text = "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 30)) + "  " * 30 + "v: 1\n"
    assert load_yaml_text(text, "f.yaml").data["a"]["k1"]["k2"]


# ---- issue 25, 8: the node graph and the data are not both whole in memory ----------------------------

def test_a_large_mapping_is_read_without_holding_its_node_graph_and_its_data_at_once():
    """PyYAML's node graph of a 10 MB flow mapping took 480 MB and the data with its marks 520 MB more,
    with construct_object's cache of every node on top (1.03 GB at the peak). Without anchors each node
    is let go once built: the peak is now under 2.5x what the document keeps (it was 2.95x)."""
    import tracemalloc

    text = "cfg: {" + ", ".join(f"key{i:07d}: 1" for i in range(20_000)) + "}\n"
    load_yaml_text("warm: 1\n", "w")   # PyYAML's import and the loader classes are not the document
    tracemalloc.start()
    try:
        doc = load_yaml_text(text, "f")
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(doc.data["cfg"]) == 20_000 and doc.mark(("cfg", "key0019999")) == (1, text.index("key0019999") + 1)
    assert peak < 2.5 * kept, f"peak {peak / 1e6:.1f} MB for a document that keeps {kept / 1e6:.1f} MB"


def test_an_anchored_document_still_builds_each_alias():
    doc = load_yaml_text("a: &x {b: [1, 2]}\nc: *x\nd: [*x, *x]\n", "f")
    assert doc.data == {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}, "d": [{"b": [1, 2]}, {"b": [1, 2]}]}
    assert doc.data["c"] is not doc.data["a"] and doc.mark(("d", 1, "b")) == (1, 8)  # where the anchor wrote it
