"""`ci_tools.yaml.fast`: within its subset the data equals PyYAML's; outside it, it declines.

The safety property (checked on the corpus, on a table of tricky snippets and by hypothesis over
random line soups): `load_plain` either raises `Unsupported` or returns exactly what PyYAML's safe
loader returns (same types, same key order) for a document PyYAML accepts. It never accepts a
document PyYAML rejects.
"""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tools.yaml.fast import Unsupported, load_plain


def same(a, b) -> bool:
    """Equal with identical types and mapping order (1, 1.0 and True are all different here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(same(ka, kb) and same(va, vb)
                                        for (ka, va), (kb, vb) in zip(a.items(), b.items()))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or repr(a) == repr(b)
    return a == b


def pyyaml(text: str):
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def check(text: str) -> bool:
    """True when the subset reader took the text (and then agreed with PyYAML)."""
    try:
        got = load_plain(text)
    except Unsupported:
        return False
    try:
        want = pyyaml(text)
    except yaml.YAMLError as exc:  # pragma: no cover - the failure being tested for
        pytest.fail(f"accepted a document PyYAML rejects ({exc}):\n{text}")
    assert same(got, want), f"differs from PyYAML:\n{text}\n{got!r}\n{want!r}"
    return True


def test_corpus_masters_and_runners_are_in_the_subset(shared):
    # the speed of `matrix full-sweep` depends on these never falling back to PyYAML
    for name in ("nvidia-master.yaml", "amd-master.yaml", "runners.yaml"):
        assert check((shared / "corpus" / "inferencex" / "configs" / name).read_text(encoding="utf-8")), name


def test_every_corpus_and_repo_yaml_file_agrees_or_declines(shared):
    from pathlib import Path

    from tests import public_clone

    root = Path(__file__).resolve().parents[2]
    # the corpus a public clone has (tests/public_clone.py), not whatever else a developer's ../shared holds
    parts = [shared / "corpus" / part for part in sorted(public_clone.public_parts(public_clone.pins()))]
    files = [f for part in parts for pattern in ("*.yaml", "*.yml") for f in sorted(part.rglob(pattern))]
    files += sorted((root / "inferencex-e2e").rglob("*.yaml"))
    assert len(files) > 5
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            pyyaml(text)
        except yaml.YAMLError:
            with pytest.raises(Unsupported):
                load_plain(text)
            continue
        check(text)


SUPPORTED = [
    "",
    "# only a comment\n",
    "a: 1\nb: -2\nc: 0\nd: 1.5\ne: -0.25\nf: 2_063_920\ng: 1.2.1\n",
    "a: true\nb: False\nc: yes\nd: NO\ne: on\nf: Off\ng: null\nh: ~\ni:\nj: y\nk: n\n",
    "a: hello world\nb: nvcr.io/x/y:0.8.1.post1\nc: a#b\nd: x # comment\ne: a, b [c] {d}\nf: /p/q\n",
    'a: "quoted # not a comment"\nb: \'it\'\'s\'\nc: "x"  # c\nd: "yes"\ne: \'8\'\n',
    "a: [1, 2, 4]\nb: []\nc: {}\nd: { tp: 8, ep: 1, dp-attn: true, spec: mtp }\ne: [a, \"b c\", 'd']\n",
    "a: { conc-list: [1, 4], kv: { name: x } }  # nested\nb: [[1, 2], [3]]\nc: [ ]\n",
    "k:\n  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n      search-space:\n      - { tp: 8 }\n      - tp: 4\n        ep: 4\n",
    "- a\n- - b\n  - c\n- k: v\n  l: w\n-\n  m: 1\n- \n",
    "a:\n- 1\n- 2\nb: 3\n",
    "cluster:h100-cw:\n  x: 1\nhttp://x: 2\n",
    "a:\n  # comment at any indent\n      # another\n  b: 1\n\n\n  c: 2\n",
    "a: 1   \nb: x   \n",
    "a: caf\u00e9 \u2014 ok\n",
]


@pytest.mark.parametrize("text", SUPPORTED)
def test_supported_snippets_equal_pyyaml(text):
    assert check(text), "expected the subset reader to take this"


UNSUPPORTED = [
    "a: &x 1\nb: *x\n",                      # anchors and aliases
    "a: !!str 1\n",                          # tags
    "a: |\n  text\n",                        # block scalars
    "a: >\n  text\n",
    "a: some\n  continued\n",                # multi-line plain scalar
    "a: [1,\n  2]\n",                        # multi-line flow
    'a: "esc\\n"\n',                         # escapes
    "a: 1\na: 2\n",                          # duplicate keys
    "a: { x: 1, x: 2 }\n",
    "a:\n    b: 1\n  c: 2\n",               # bad indentation
    "a: 1\n  b: 2\n",
    "- a\nb: 1\n",
    "a:\n  - x\n  b: 1\n",
    "---\na: 1\n",                           # document markers
    "a: 1\n...\n",
    "a:\n\tb: 1\n",                         # TAB
    "a: 1\r\nb: 2\r\n",                      # CR LF
    "a: x\x85y\n",                           # NEL, a YAML line break
    "a: x\u2028y\n",
    "a: - x\n",                              # a sequence entry where a value belongs
    "a: b: c\n",
    "a: b:\n",
    "a: [1, 2,]\n",                          # trailing comma
    "a: [x: 1]\n",                           # single-pair mapping in a flow sequence
    "a: {x}\n",
    "a: \"x\"#c\n",
    "a: [1]#c\n",
    "'quoted key': 1\n",
    "? complex\n: key\n",
    "<<: {a: 1}\n",                          # merge key
    "a: @x\n",
    "a: %x\n",
    "a: `x\n",
    "plain scalar document\n",
    "a: [1, 2\n",
    "k" * 1030 + ": 1\n",                   # longer than PyYAML's simple-key limit
    "{" + "k" * 1030 + ": 1}\n",
    "a: {" + "k" * 1030 + ": 1}\n",
]


@pytest.mark.parametrize("text", UNSUPPORTED)
def test_outside_the_subset_it_declines(text):
    with pytest.raises(Unsupported):
        load_plain(text)


@pytest.mark.parametrize("value", ["010", "0o17", "0x1f", "0b101", "1:30", "190:20:30", "2024-01-02",
                                   "2024-01-02 10:00:00", ".inf", "-.inf", ".nan", "+1", "+0.5", "1e3",
                                   "1.0e+3", "6.8523015e+5", "1_0.5", "~x", ".5", "1.", "0_", "-0", "-0.0"])
def test_unusual_scalars_are_resolved_as_pyyaml_does(value):
    # these go through PyYAML's resolver one by one, and the document stays in the fast path
    assert check(f"a: {value}\nb: [{value}]\n") | check(f"a: {value}\n")


@pytest.mark.parametrize("value", ["-", "-a", "=", "+", "+x"])
def test_indicator_like_scalars_decline(value):
    assert not check(f"a: {value}\n")


_TOKENS = ["1", "0", "-3", "010", "1_000", "1.5", "1.2.3", "1e3", "yes", "No", "null", "~", "x", "a b",
           "a#b", "a #c", "a: b", "a:b", "'q'", "'it''s'", '"d"', '"e\\n"', "[1, 2]", "[]", "{ k: v }",
           "{k: [1]}", "[a, ]", "&a", "*a", "!t x", "|", ">", "@", "-", "- x", "2024-01-01", ":", "?",
           "\u00e9", "\t", "#c", ""]
_KEYS = ["k", "tp", "conc-list", "1", "yes", "a:b", "'q'", "k k", "-k", "k"]


@st.composite
def line_soups(draw):
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        indent = " " * draw(st.sampled_from([0, 0, 2, 2, 4, 6, 1, 3]))
        kind = draw(st.sampled_from(["kv", "kv", "k", "item", "item-kv", "item-empty", "comment", "blank"]))
        key, tok = draw(st.sampled_from(_KEYS)), draw(st.sampled_from(_TOKENS))
        lines.append({"kv": f"{indent}{key}: {tok}", "k": f"{indent}{key}:", "item": f"{indent}- {tok}",
                      "item-kv": f"{indent}- {key}: {tok}", "item-empty": f"{indent}-",
                      "comment": f"{indent}# {tok}", "blank": indent}[kind])
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@settings(max_examples=300, deadline=None)
@given(line_soups())
def test_random_line_soups_agree_with_pyyaml_or_decline(text):
    check(text)


_SCALARS = ["1", "0", "-3", "1_000", "1.5", "1.2.3", "yes", "No", "null", "~", "x", "a b", "a#b", "x # c",
            "'q'", "'it''s'", '"d"', '"8"', "nvcr.io/a:1.0", "2024-01-01", "0x1f", "\u00e9", "a:b"]
_NAMES = ["k", "tp", "conc-list", "1", "on", "a:b", "kv-offload-backend"]


def _render(node, indent: int, draw) -> list[str]:
    """Block YAML for `node` (a tree of ("map", pairs) / ("seq", items) / scalar text), with the
    layout choices a person makes: a sequence at or below its key's indent, `- key:` items, flows."""
    pad = " " * indent
    out: list[str] = []
    kind, body = node
    for entry in body:
        if draw(st.booleans()) and draw(st.booleans()):
            out.append(pad + "# " + draw(st.sampled_from(_SCALARS)))
        if kind == "map":
            key, value = entry
            head = f"{pad}{key}:"
        else:
            value = entry
            head = f"{pad}-"
        if isinstance(value, str):
            out.append(f"{head} {value}")
        elif all(isinstance(v, str) for v in (value[1] if value[0] == "seq" else [v for _, v in value[1]])) \
                and draw(st.booleans()):
            inner = ", ".join(value[1]) if value[0] == "seq" else ", ".join(f"{k}: {v}" for k, v in value[1])
            out.append(f"{head} {'[' if value[0] == 'seq' else '{'}{inner}{']' if value[0] == 'seq' else '}'}")
        elif not value[1]:
            out.append(f"{head} {'[]' if value[0] == 'seq' else '{}'}")
        elif kind == "seq" and value[0] == "map" and draw(st.booleans()):
            lines = _render(value, indent + 2, draw)  # `- key: v` with the rest below
            out.append(f"{pad}- {lines[0].lstrip(' ')}" if not lines[0].lstrip().startswith("#") else head)
            out.extend(lines[1:] if not lines[0].lstrip().startswith("#") else lines)
        else:
            same_indent = kind == "map" and value[0] == "seq" and draw(st.booleans())
            out.append(head)
            out.extend(_render(value, indent if same_indent else indent + draw(st.sampled_from([1, 2, 4])), draw))
    return out


def _trees(depth: int):
    leaf = st.sampled_from(_SCALARS)
    if depth == 0:
        return leaf
    sub = st.one_of(leaf, _trees(depth - 1))
    maps = st.lists(st.tuples(st.sampled_from(_NAMES), sub), max_size=4, unique_by=lambda kv: kv[0]).map(lambda p: ("map", p))
    seqs = st.lists(sub, max_size=4).map(lambda items: ("seq", items))
    return st.one_of(maps, seqs)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_generated_config_shaped_documents_agree_with_pyyaml_or_decline(data):
    tree = data.draw(_trees(3).filter(lambda t: isinstance(t, tuple) and t[1]))
    text = "\n".join(_render(tree, 0, data.draw)) + "\n"
    check(text)
