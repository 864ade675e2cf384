"""Hypothesis: history is immutable byte for byte, well-formed appends pass, garbage never crashes."""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings, strategies as st

from ci_tools.changelog.lint import Mode, lint_change
from ci_tools.changelog.merge import canonicalize, resolve_conflict
from ci_tools.changelog.schema import BAD_TEXT
from ci_tools.errors import InputError

from .helpers import LINK, MASTER_KEYS, REPO, entry, history

F = "log.yaml"
PR = Mode(REPO, pr=42)
# History with the warts real history has: whitespace-only separator lines, a placeholder link.
H = (history(3).replace(b"\n\n", b"\n  \n", 1) + b"\n"
     + entry(keys=("gone-config",), desc=("Old, 'quoted' text: with colon.",), link=f"{LINK}/XXX",
             extra="  scenario-type:\n    - agentic-coding\n"))
NEW = entry(keys=("cfg-b",), desc=("A new entry.",))


def lint(base, head, mode=PR, keys=MASTER_KEYS):
    return lint_change(base, head, file=F, mode=mode, master_keys=keys)


assert lint(H, H + b"\n" + NEW).ok  # the fixtures themselves are valid


@st.composite
def history_mutation(draw):
    """(position, kind, byte): substitute / insert before / delete one byte of history."""
    pos = draw(st.integers(0, len(H) - 1))
    kind = draw(st.sampled_from(["sub", "ins", "del"]))
    byte = draw(st.integers(0, 255))
    if kind == "sub" and byte == H[pos]:
        byte = (byte + 1) % 256
    return pos, kind, byte


def mutate(content: bytes, pos: int, kind: str, byte: int) -> bytes:
    if kind == "sub":
        return content[:pos] + bytes([byte]) + content[pos + 1:]
    if kind == "ins":
        return content[:pos] + bytes([byte]) + content[pos:]
    return content[:pos] + content[pos + 1:]


@settings(max_examples=400, deadline=None)
@given(history_mutation())
def test_any_historical_byte_mutation_with_an_append_is_rejected(m):
    head = mutate(H, *m) + b"\n" + NEW
    assert not lint(H, head).ok


@settings(max_examples=400, deadline=None)
@given(history_mutation())
def test_a_mutation_alone_passes_only_as_a_canonical_pr_link_correction(m):
    head = mutate(H, *m)
    result = lint(H, head, mode=Mode(REPO))
    if result.ok:
        assert result.corrections == 1 and not result.added
        changed = [(a, b) for a, b in zip(H.split(b"\n"), head.split(b"\n")) if a != b]
        assert len(changed) == 1 and changed[0][1].startswith(b"  pr-link: " + LINK.encode() + b"/")


# -- well-formed appends --------------------------------------------------------------------
# well-formed: none of the characters the lint refuses in text (schema.BAD_TEXT: bidi and invisible format
# characters are category Cf, which the category list alone lets through)
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cn", "Zl", "Zp"), blacklist_characters="\ufeff\x85"),
               min_size=1, max_size=40).filter(lambda s: s.strip() and not BAD_TEXT.search(s))
KEY_OR_PATTERN = st.sampled_from(MASTER_KEYS + ["cfg-*", "dsr1-fp?-*", "*-sglang", "gptoss*", "*"])


def _quoted(text: str, ascii_escapes: bool) -> str:
    # JSON strings are YAML double-quoted scalars, except that YAML has no surrogate-pair escapes
    return json.dumps(text, ensure_ascii=ascii_escapes and all(ord(c) < 0x10000 for c in text))


@st.composite
def new_entry(draw) -> bytes:
    keys = draw(st.lists(KEY_OR_PATTERN, min_size=1, max_size=4))
    desc = draw(st.lists(TEXT, min_size=1, max_size=3))
    lines = ["- config-keys:"] + [f"    - {json.dumps(k)}" if draw(st.booleans()) else f"    - {k}" if "*" not in k[:1]
                                  else f"    - '{k}'" for k in keys]
    fields = {
        "description": ["  description:"] + [f"    - {_quoted(d, draw(st.booleans()))}" for d in desc],
        "pr-link": [f"  pr-link: {draw(st.sampled_from(['XXX', LINK + '/XXX', LINK + '/42']))}"],
    }
    if draw(st.booleans()):
        scen = draw(st.lists(st.sampled_from(["fixed-seq-len", "agentic-coding"]), min_size=1, max_size=2, unique=True))
        fields["scenario-type"] = ["  scenario-type:"] + [f"    - {s}" for s in scen]
    append_only = draw(st.booleans())
    if append_only:
        fields["append-only"] = ["  append-only: true"]
    else:
        for flag in ("evals-only", "all-evals"):
            if draw(st.booleans()):
                fields[flag] = [f"  {flag}: {str(draw(st.booleans())).lower()}"]
        if draw(st.booleans()):
            fields["eval-min-prefill-ep"] = [f"  eval-min-prefill-ep: {draw(st.one_of(st.none(), st.integers(1, 64))) or 'null'}"]
    order = draw(st.permutations(list(fields)))
    for name in order:
        lines += fields[name]
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(new_entry(), min_size=1, max_size=3), st.sampled_from([H, history(1), b""]))
def test_any_well_formed_append_is_accepted(entries, base):
    head = base + (b"\n" if base else b"") + b"\n".join(entries)
    result = lint(base or None, head)
    assert result.ok, [f.as_text() for f in result.errors]
    assert len(result.added) == len(entries)
    # and canonicalising it keeps it valid, now in main mode
    out = canonicalize(base or None, head, file=F, repo=REPO, pr=42)
    assert lint(base or None, out, mode=Mode(REPO)).ok


@settings(max_examples=100, deadline=None)
# lone surrogates are left out: raw they are not UTF-8 and escaped the YAML reader refuses them, both
# before any text rule runs
@given(TEXT, st.sampled_from(sorted({chr(c) for c in range(0xD800) if BAD_TEXT.fullmatch(chr(c))}
                                    | {chr(c) for c in range(0xE000, 0x110000) if BAD_TEXT.fullmatch(chr(c))})),
       st.integers(0, 40), st.booleans())
def test_a_refused_character_anywhere_in_a_description_is_said(text, bad, at, ascii_escapes):
    """The other side of the well-formed property: a well-formed description with one character of
    schema.BAD_TEXT written as a YAML escape (raw, the byte rules refuse it first) is refused, naming its
    code point."""
    cp = ord(bad)
    escape = f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"
    quoted = _quoted(text[:at], ascii_escapes)[:-1] + escape + _quoted(text[at:], ascii_escapes)[1:]
    head = H + b"\n" + entry(desc=()).replace(b"  description:\n", b"  description:\n    - " + quoted.encode() + b"\n")
    result = lint(H, head)
    assert not result.ok and any(f"U+{ord(bad):04X}" in f.message for f in result.errors), \
        [f.as_text() for f in result.errors]


# -- garbage never crashes ------------------------------------------------------------------
INTERESTING = b"\n\n\n  -:-:'\"[]{}*&!#|>?%@`,\t\r\0\xef\xbb\xbf\xff\xc3"


def random_mutation(seed: int) -> bytes:
    """1-4 substitutions/insertions/deletions of bytes, biased towards bytes YAML cares about.

    Driven by one integer so that hypothesis spends its time on the gate, not on drawing: 10,000
    examples stay within a few seconds.
    """
    rnd = random.Random(seed)
    content = bytearray(H + b"\n" + NEW)
    for _ in range(rnd.randint(1, 4)):
        pos = rnd.randrange(len(content) + 1)
        byte = rnd.choice(INTERESTING) if rnd.random() < 0.7 else rnd.randrange(256)
        kind = rnd.choice("sid")
        if kind == "i":
            content[pos:pos] = bytes([byte])
        elif pos < len(content):
            content[pos:pos + 1] = bytes([byte]) if kind == "s" else b""
    return bytes(content)


@settings(max_examples=10_000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 2**64))
def test_ten_thousand_byte_mutations_never_raise(seed):
    result = lint(H, random_mutation(seed))  # must return a verdict, never raise
    assert result.ok or all(f.message and f.hint for f in result.errors)


@settings(max_examples=300, deadline=None, database=None)
@given(st.integers(0, 2**64))
def test_rewriters_refuse_garbage_cleanly(seed):
    head = random_mutation(seed)
    result = lint(None, head)  # as a new file: the full-parse path
    assert result.ok or all(f.message and f.hint for f in result.errors)
    for call in (lambda: canonicalize(H, head, file=F, repo=REPO, pr=42),
                 lambda: resolve_conflict(H, head, H + b"\n" + entry(link=f"{LINK}/9"), file=F, repo=REPO, pr=42),
                 lambda: resolve_conflict(H, H + b"\n" + NEW, head, file=F, repo=REPO, pr=42)):
        try:
            call()
        except InputError as exc:
            assert exc.message
