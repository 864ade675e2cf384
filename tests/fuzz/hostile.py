"""Strategies for hostile text: the YAML and Unicode an attacker reaches for (shared by the fuzz tests)."""

from __future__ import annotations

from hypothesis import strategies as st

NASTY_SCALARS = [
    "0x_", "0b_", "0o_", "0x", "0b", "2024-13-45", "2024-01-01", "2024-01-01T25:61:61Z", "1_000", "._", ".nan",
    ".inf", "-.inf", "~", "null", "yes", "no", "on", "off", "0777", "1e400", "-0", "12:30:45", "190:20:30",
    "!!binary aGk=", "!!binary ***", "!!python/object:os.system x", "!foo x", "!!int x", "!!float x",
    "!!timestamp x", "!!str", "&a x", "*a", "*undefined", "'", '"', "\\", "{", "[", "}", "]", ":", "- ", "? x",
    "|", ">", "|+", "%YAML 1.2", "---", "...", "#", "@", "`", "<<: *a", "<<: [1]", "<<: x", "!!merge x",
    "\u0085", "\u2028", "\u2029", "\ufeff", "\u200b", "\u00a0", "\x85", "\x7f", "\x1b", "\ue000", "\U0001F600",
    "\x00", "\t", "\r", "\r\n", "\\u0000", '"\\u0085"', '"\\x00"', '"\\ud800"', "'it''s'", "x" * 5000,
]

UNICODE = "\u0085\u2028\u2029\ufeff\u200b\u00a0\u2003\u3000\u202e\x7f\x1b\x0b\x0c\xad\ufffe\U0001F600"


def alias_bomb(levels: int, width: int, indent: str = "") -> str:
    lines = [f"{indent}- &b0 [" + ",".join(["lol"] * width) + "]"]
    lines += [f"{indent}- &b{i} [" + ",".join([f"*b{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@st.composite
def flow_value(draw) -> str:
    """A one-line YAML value: a nasty scalar, deep flow nesting, tags on collections, aliases."""
    kind = draw(st.integers(0, 7))
    if kind == 0:
        return draw(st.sampled_from(NASTY_SCALARS))
    if kind == 1:
        depth = draw(st.integers(1, 1200))
        opener = draw(st.sampled_from(["[", "{a: "]))
        closer = "]" if opener == "[" else "}"
        return opener * depth + closer * depth
    if kind == 2:
        return draw(st.sampled_from(["!!set", "!!omap", "!!pairs", "!custom", "!!seq", "!!map", "!"])) + " " + \
            draw(st.sampled_from(["{a, b}", "[a]", "[{a: 1}]", "{}", "[]"]))
    if kind == 3:
        return draw(st.sampled_from(["&r [*r]", "&r {a: *r}", "&r [[*r]]", "*r", "&a [1, *a]"]))
    if kind == 4:
        return draw(st.text(alphabet=st.sampled_from(list(UNICODE) + list("ab:-#[]{},&*!|>'\"\\ ")), max_size=40))
    if kind == 5:
        return '"' + draw(st.text(alphabet=st.sampled_from(list(UNICODE) + list("ab\\u0\"")), max_size=20)) + '"'
    if kind == 6:
        return "x" * draw(st.integers(0, 200_000))
    return draw(st.text(max_size=30))


@st.composite
def block_fragment(draw, indent: str = "    ") -> str:
    """Lines (already indented) to put under a list or mapping key: bombs, deep blocks, nasty items."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return alias_bomb(draw(st.integers(1, 9)), draw(st.integers(1, 10)), indent)
    if kind == 1:
        depth = draw(st.integers(1, 400))
        return "".join(f"{indent}{'  ' * i}- k{i}:\n" for i in range(depth)) + f"{indent}{'  ' * depth}  v\n"
    if kind == 2:
        n = draw(st.integers(1, 5))
        return "".join(f"{indent}- {draw(flow_value())}\n" for _ in range(n))
    if kind == 3:
        return f"{indent}- |\n{indent}  " + draw(st.text(alphabet=st.sampled_from(list(UNICODE) + list("ab :")),
                                                          max_size=50)) + "\n"
    return f"{indent}- {draw(flow_value())}\n"


def mutate_bytes(content: bytes, edits: list[tuple[int, str, bytes]]) -> bytes:
    """Apply (position fraction in [0, 1e6), kind, bytes) edits: insert, replace a span, or delete a span."""
    out = content
    for frac, kind, data in edits:
        pos = min(len(out), frac * len(out) // 1_000_000)
        if kind == "ins":
            out = out[:pos] + data + out[pos:]
        elif kind == "sub":
            out = out[:pos] + data + out[pos + len(data):]
        else:
            out = out[:pos] + out[pos + max(1, len(data)):]
    return out


byte_edit = st.tuples(st.integers(0, 999_999), st.sampled_from(["ins", "sub", "del"]),
                      st.one_of(st.binary(min_size=1, max_size=8),
                                st.sampled_from([s.encode("utf-8", "surrogatepass") for s in NASTY_SCALARS[:60]])))
