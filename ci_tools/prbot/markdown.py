"""Which lines of a comment body GitHub renders as text a reader sees. Pure.

GitHub renders comments with cmark-gfm (CommonMark), then its HTML sanitizer. Some markup spans
several lines and shows none of them: a raw HTML tag whose quoted attribute runs over lines
(`<img alt="` ... `">`), a link reference definition (`[//]: # (` ... `)`, a common "Markdown
comment"), an inline link's destination and title or an image's alt text when they run over lines. And
raw HTML passes through as written: an HTML block that leaves a tag or a quoted attribute open
(`<div title="`, then a blank line) swallows the rendered lines after it. A command or a ticked box
written there is one nobody sees, so the comment grammar (`commands.py`) and the sign-off checklist
(`signoff/decide.py`) skip those lines; also code (fenced blocks, code spans over lines), which shows
text but never acts.

Each rule errs on the side of hiding: a line that could be inside such markup counts as hidden (a
visible command then needs saying again, which is safe; an invisible one acting is not). The scans are
linear in the body: regular expressions without ambiguous repetition, the delimited constructs by
bisecting their closing characters' positions, one pass of a simplified HTML tokenizer.
"""

from __future__ import annotations

import bisect
import re
from typing import Iterable, Iterator

# A closing fence: the opening's character, at least as many, then only blanks (CommonMark: no info string).
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
# A whole fenced code block: its opening line (a backtick fence's info string holds no backtick), then
# whole lines up to the first closing fence of its character and at least its length, or the body's end.
_FENCED = re.compile(r"^ {0,3}(?:(?P<b>`{3,})[^`\n]*|(?P<t>~{3,})[^\n]*)(?=\n|\Z)"
                     r"(?:\n(?:[^\n]*\n)*?[ ]{0,3}(?(b)(?P=b)`*|(?P=t)~*)[ \t]*(?=\n|\Z)|[\s\S]*)", re.M)
# More backtick runs than this in one body: pairing them costs a loop per run, so every line from the
# first run to the last is taken as code instead (no real comment comes near it).
MAX_BACKTICK_RUNS = 2000

# CommonMark's open tag: a name, attributes (an unquoted, 'single' or "double" quoted value, the quoted
# ones across lines if need be), optional `/`, `>`. A closing tag may hold blanks and a line ending too.
_VALUE = r"""(?:[^\s"'=<>`]+|'[^']*'|"[^"]*")"""
_TAG = re.compile(rf"<[A-Za-z][A-Za-z0-9-]*(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*{_VALUE})?)*\s*/?>"
                  r"|</[A-Za-z][A-Za-z0-9-]*\s*>")
# The same, whole on one line (an HTML block of kind 7 starts with one).
_LINE_TAG = (r"<[A-Za-z][A-Za-z0-9-]*(?:[ \t]+[A-Za-z_:][A-Za-z0-9_.:-]*(?:[ \t]*=[ \t]*"
             r"""(?:[^\s"'=<>`]+|'[^'\n]*'|"[^"\n]*"))?)*[ \t]*/?>|</[A-Za-z][A-Za-z0-9-]*[ \t]*>""")
# A link reference definition: `[label]:`, a destination (on the next line if need be), an optional title
# ("...", '...' or (...), across lines if need be) and nothing else on its last line. It renders as nothing.
_TITLE = r"""(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\))"""
_LINK_DEF = re.compile(rf"^ {{0,3}}\[(?:[^\[\]\\]|\\.){{1,999}}\]:[ \t]*\n?[ \t]*(?:<[^<>\n]*>|[^\s<]\S*)"
                       rf"(?:[ \t]*\n?[ \t]*{_TITLE})?[ \t]*$", re.M)
# An inline link's or image's `(destination "title")`: a line ending may stand before the destination and
# before the title, and the title itself may run over lines. Shown: neither.
_LINK_TAIL = re.compile(rf"\]\([ \t]*\n?[ \t]*(?:<[^<>\n]*>|[^\s()<]*(?:\([^\s()]*\)[^\s()]*)*)"
                        rf"(?:[ \t]*\n?[ \t]*{_TITLE})?[ \t]*\n?[ \t]*\)")
# A line that certainly ends the paragraph before it (CommonMark): blank, or the start of a list item with
# text (an ordered one only from 1), a quote, a heading or a fence. Inline markup never runs across one.
# Other lines that may end a paragraph are not listed: missing one only keeps markup that may be none.
_INTERRUPTS = re.compile(r"^(?:[ \t]*$| {0,3}(?:[-+*][ \t]+\S|1[.)][ \t]+\S|>|#{1,6}(?:[ \t]|$)|```[^`\n]*$|~~~))",
                         re.M)


class Lines:
    """A set of 0-based line numbers kept as sorted, disjoint, inclusive ranges: a 1 MB body of newlines
    is a million lines, and one open tag may hide all of them."""

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()):
        merged: list[list[int]] = []
        for first, last in sorted(ranges):
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        self.ranges = [(a, b) for a, b in merged]
        self._firsts = [a for a, _ in self.ranges]

    def __contains__(self, line: int) -> bool:
        i = bisect.bisect_right(self._firsts, line) - 1
        return i >= 0 and line <= self.ranges[i][1]

    def __or__(self, other: "Lines") -> "Lines":
        return Lines(self.ranges + other.ranges)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lines) and self.ranges == other.ranges

    def __repr__(self) -> str:
        return f"Lines({self.ranges})"

    def keep(self, lines: list[str]) -> list[str]:
        """`lines` without the ones in this set, by slices (no per-line test)."""
        out: list[str] = []
        at = 0
        for first, last in self.ranges:
            out.extend(lines[at:first])
            at = max(at, last + 1)
        out.extend(lines[at:])
        return out


def _line_ranges(body: str, spans: Iterable[tuple[int, int]], *, single: bool = False) -> Lines:
    """The lines character spans touch: only those running over several lines unless `single`. Line
    numbers by counting newlines between sorted offsets, so the cost is one pass over the body."""
    ranges: list[tuple[int, int]] = []
    at = line = 0
    for start, end in sorted(spans):
        line += body.count("\n", at, start)
        at = start
        last = line + body.count("\n", start, max(start, end - 1))
        if single or last > line:
            ranges.append((line, last))
    return Lines(ranges)


def _delimited(body: str, opener: str, closer: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each `opener` ... first `closer` after it."""
    closes = [m.start() for m in re.finditer(re.escape(closer), body)]
    for m in re.finditer(re.escape(opener), body):
        i = bisect.bisect_left(closes, m.end())
        if i == len(closes):
            break
        yield m.start(), closes[i] + 1


def _code_spans(body: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each inline code span: a run of backticks to the next run of the same length in
    the same paragraph (CommonMark; a run with no partner is literal). Its text shows, but as code."""
    runs = [(m.start(), m.end() - m.start()) for m in re.finditer("`+", body)]
    if not runs:
        return
    if len(runs) > MAX_BACKTICK_RUNS:
        yield runs[0][0], runs[-1][0] + runs[-1][1]
        return
    blocks = [m.start() for m in _INTERRUPTS.finditer(body)]
    keys = [(bisect.bisect_right(blocks, start), length) for start, length in runs]
    partner: list[int | None] = [None] * len(runs)
    after: dict[tuple[int, int], int] = {}
    for i in range(len(runs) - 1, -1, -1):
        partner[i] = after.get(keys[i])
        after[keys[i]] = i
    i = 0
    while i < len(runs):
        j = partner[i]
        if j is None:
            i += 1
            continue
        yield runs[i][0], runs[j][0] + runs[j][1]
        i = j + 1


def markup_lines(body: str) -> Lines:
    """The lines (0-based, of `body` split on "\\n") that a multi-line tag, link reference definition,
    link destination and title, image alt text or code span touches: markup a reader of the rendered
    comment does not see as text (or, for a code span, sees as code). Markup on one line is left alone:
    the line holding it is not a command anyway, and a checklist line keeps its visible part."""
    spans: list[tuple[int, int]] = [m.span() for m in _TAG.finditer(body)]
    spans += [m.span() for m in _LINK_DEF.finditer(body)]
    spans += [m.span() for m in _LINK_TAIL.finditer(body)]
    spans += list(_delimited(body, "![", "]"))     # an image's alt text: shown as nothing (the image)
    multi = [(a, b) for a, b in spans if body.find("\n", a, b) >= 0]
    if multi:
        # inline markup ends with its paragraph: a span over a line that starts another block is none
        # (`<img alt="`, then `- [x] item`: a list, shown). Raw HTML blocks are `open_html_lines`'.
        breaks = [m.start() for m in _INTERRUPTS.finditer(body)]
        multi = [(a, b) for a, b in multi if bisect.bisect_right(breaks, a) == bisect.bisect_right(breaks, b - 1)]
    return _line_ranges(body, multi + list(_code_spans(body)))


# CommonMark's HTML blocks: raw HTML passed to the page as written. Kinds 1-5 end at their closing
# text, 6 and 7 at a blank line. Kind 7 (any complete tag alone on its line) is taken to start wherever
# such a line is, paragraph or not, and container prefixes (`>`, list markers) are looked through: both
# only make more lines raw, so more lines hidden.
_BLOCK_TAGS = ("address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|"
               "dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|"
               "head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|"
               "param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul")
_HTML_STARTS = (
    (re.compile(r"<(?:script|pre|style|textarea)(?:[\s>]|$)", re.I | re.M),
     re.compile(r"</(?:script|pre|style|textarea)>", re.I)),
    (re.compile(r"<!--"), re.compile(r"-->")),
    (re.compile(r"<\?"), re.compile(r"\?>")),
    (re.compile(r"<![A-Za-z]"), re.compile(r">")),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>")),
    (re.compile(rf"</?(?:{_BLOCK_TAGS})(?:[\s>]|/>|$)", re.I | re.M), None),
    (re.compile(rf"(?:{_LINE_TAG})[ \t]*$", re.M), None),
)
# Where a fence or an HTML block may start: the first `<`, backtick or tilde of a line, after only what a
# line may hold before one (blanks; `>` and list markers before an HTML block).
_FIRST = re.compile(r"[<`~]")
_BEFORE_TAG = re.compile(r"(?:[ \t]*>|[ \t]*(?:[-+*]|\d{1,9}[.)])(?=[ \t]))*[ \t]*")
_BLANK_LINE = re.compile(r"^[ \t]*$", re.M)
# A browser's tokenizer, simplified: what ends each state that swallows text, and what starts one.
_DATA, _TAG_OPEN, _DQ, _SQ, _COMMENT = range(5)
_OPENS = re.compile(r"<!--|<[A-Za-z/!?]")
_ENDS = {_TAG_OPEN: re.compile(r"[\"'>]"), _DQ: re.compile('"'), _SQ: re.compile("'"), _COMMENT: re.compile("-->")}
_AFTER = {'"': _DQ, "'": _SQ, ">": _DATA}


def _tokenize(body: str, start: int, end: int, state: int, opened: int) -> tuple[int, int, list[tuple[int, int]]]:
    """Read body[start:end] as raw HTML from `state` (a construct open since offset `opened`): (the state
    after it, where the construct still open began, the spans of the constructs it closed)."""
    spans: list[tuple[int, int]] = []
    at = start
    while at < end:
        if state == _DATA:
            m = _OPENS.search(body, at, end)
            if not m:
                break
            opened, at = m.start(), m.end()
            state = _COMMENT if m.group() == "<!--" else _TAG_OPEN
            continue
        m = _ENDS[state].search(body, at, end)
        if not m:
            break
        at = m.end()
        if state == _TAG_OPEN:
            state = _AFTER[m.group()]
        else:
            state = _TAG_OPEN if state in (_DQ, _SQ) else _DATA
        if state == _DATA:
            spans.append((opened, at))
    return state, opened, spans


def _starts(body: str, at: int) -> Iterator[tuple[int, int, re.Match | None]]:
    """(line start, offset of the `<` or fence, the fenced block's match or None) of each line from `at` on
    that may open a fenced block or an HTML block. One search per such line: a line whose first `<`,
    backtick or tilde stands after other text is passed over whole."""
    while True:
        m = _FIRST.search(body, at)
        if not m:
            return
        line_start = body.rfind("\n", 0, m.start()) + 1
        prefix_end = _BEFORE_TAG.match(body, line_start, m.start()).end()
        if m.group() == "<" and prefix_end == m.start():
            yield line_start, m.start(), None
        elif m.group() != "<" and m.start() - line_start <= 3:
            fence = _FENCED.match(body, line_start)
            if fence:
                yield line_start, m.start(), fence
        line_end = body.find("\n", m.start())
        if line_end < 0:
            return
        at = line_end + 1


def open_html_lines(body: str) -> Lines:
    """The lines a browser reads as part of a tag, attribute value or comment of raw HTML: an HTML block
    whose tag runs over lines, or is left open at the block's end, which swallows the rendered lines
    after it (`<div title="`, a blank line, `/use 9`: the page shows nothing) until raw HTML closes it.
    Driven by the lines where a fence or an HTML block may start, so plain text costs one search."""
    spans: list[tuple[int, int]] = []
    state, opened, at = _DATA, 0, 0
    while (found := next(_starts(body, at), None)) is not None:
        line_start, tag_at, fence = found
        line_end = body.find("\n", tag_at)
        line_end = len(body) if line_end < 0 else line_end
        at = line_end + 1
        if fence is not None:
            at = fence.end() + 1     # a fenced block's lines start nothing
            continue
        stop = next((stop for start, stop in _HTML_STARTS if start.match(body, tag_at)), False)
        if stop is False:
            continue
        if stop is None:
            blank = _BLANK_LINE.search(body, min(line_end + 1, len(body)))
            block_end = blank.start() if blank else len(body)
        else:
            close = stop.search(body, tag_at)
            block_end = body.find("\n", close.end()) if close else -1
            block_end = len(body) if block_end < 0 else block_end
        state, opened, closed = _tokenize(body, line_start, block_end, state, opened)
        spans += closed
        at = max(block_end, line_end) + 1
    if state != _DATA:
        spans.append((opened, len(body) + 1))   # open to the end: everything after it is swallowed
    return _line_ranges(body, spans)


def hidden_lines(body: str) -> Lines:
    """The lines (0-based, of `body` split on "\\n") a reader of the rendered comment does not see as
    text: multi-line markup (`markup_lines`) and raw HTML that runs over lines or is left open
    (`open_html_lines`)."""
    return markup_lines(body) | open_html_lines(body)


def fenced_lines(body: str) -> Lines:
    """The lines of fenced code blocks, fences included (an unclosed fence runs to the end)."""
    if "```" not in body and "~~~" not in body:
        return Lines()
    return _line_ranges(body, (m.span() for m in _FENCED.finditer(body)), single=True)


_OPENS_FENCE = re.compile(r"^ {0,3}(?:(`{3,})[^`]*|(~{3,}).*)$")


def opens_fence(raw: str) -> str | None:
    """The fence `raw` opens a fenced code block with, or None (a backtick fence's info string holds no
    backtick: "```a`" is text)."""
    m = _OPENS_FENCE.match(raw)
    return (m.group(1) or m.group(2)) if m else None


def closes_fence(raw: str, fence: str) -> bool:
    """Whether `raw` closes a fenced code block opened by `fence` (the same character, at least as many
    of them, nothing after but blanks)."""
    close = _FENCE_CLOSE.match(raw)
    return bool(close) and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence)
