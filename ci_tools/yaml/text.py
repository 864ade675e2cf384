"""Characters no text of ci-tools' inputs may hold (pure): the one definition, for new changelog entries
(`changelog/schema.py`) and recipes (`config/recipetext.py`).

Raw bytes of this kind are refused by the files' byte rules; these come through YAML escapes ("\\0",
"\\e[31m", "\\u202e", "\\x85"). From text they reach PR comments, terminals and the results page: C0/C1
controls (terminal escapes, line breaks inside one item), Unicode bidi controls (they reorder what a
reviewer sees: "Trojan Source"), invisible format characters, lone surrogates (not encodable as UTF-8)
and noncharacters.
"""

from __future__ import annotations

import re

BAD_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060\u2066-\u2069"
                       "\ufeff\ufff9-\ufffb\ufffe\uffff\ud800-\udfff]")
_CONTROL_NAMES = {0: "NULL", 7: "BELL", 8: "BACKSPACE", 9: "TAB", 10: "LINE FEED", 11: "LINE TABULATION",
                  12: "FORM FEED", 13: "CARRIAGE RETURN", 27: "ESCAPE", 127: "DELETE", 0x85: "NEXT LINE"}


def char_name(ch: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`, with the kind of character for those Unicode leaves unnamed."""
    import unicodedata

    cp = ord(ch)
    name = _CONTROL_NAMES.get(cp) or unicodedata.name(ch, "")
    if cp < 0x20 or cp == 0x7F:
        kind = "a C0 control character"
    elif 0x80 <= cp <= 0x9F:
        kind = "a C1 control character"
    elif 0xD800 <= cp <= 0xDFFF:
        kind = "a lone surrogate (not valid in UTF-8)"
    elif cp in (0x61C, 0x200E, 0x200F) or 0x202A <= cp <= 0x202E or 0x2066 <= cp <= 0x2069:
        kind = "a bidi control character"
    elif cp in (0xFFFE, 0xFFFF):
        kind = "a noncharacter"
    else:
        kind = "an invisible format character"
    return f"U+{cp:04X}{' ' + name if name else ''} ({kind})"
