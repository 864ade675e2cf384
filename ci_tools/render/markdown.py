"""The one Markdown escaper for what ci-tools writes into GitHub's Markdown (job summaries, comments'
table cells): GitHub renders raw HTML and strips the tags it does not allow, so `<digest>` or
`"<what changed and why>"` outside a code span would vanish. Code spans are literal in Markdown (an
entity there would show as `&lt;`), so they keep their text and only `|` is escaped in a cell."""

from __future__ import annotations

import html
import re

_CODE = re.compile(r"(`+)(.+?)\1", re.S)


def text(value: str) -> str:
    """`value` as Markdown text that reads exactly as written: `&`, `<`, `>` outside code spans escaped."""
    out, at = [], 0
    for m in _CODE.finditer(value):
        out.append(html.escape(value[at:m.start()], quote=False))
        out.append(m.group(0))
        at = m.end()
    out.append(html.escape(value[at:], quote=False))
    return "".join(out)


def cell(value: str) -> str:
    """`value` in one table cell: as `text`, with `|` escaped (also in code spans, as GFM tables need)
    and line breaks as `<br>`."""
    return text(value).replace("|", "\\|").replace("\r\n", "\n").replace("\n", "<br>")


def fenced(value: str, lang: str = "") -> str:
    """`value` as a fenced block, verbatim (indentation kept, so YAML can be pasted), with a fence
    longer than any run of backticks inside it."""
    ticks = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", value)), default=0))
    return f"{ticks}{lang}\n{value.rstrip(chr(10))}\n{ticks}"
