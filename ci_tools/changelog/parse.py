"""Reading `perf-changelog.yaml` bytes into entries, with the byte-level hygiene rules.

Pure functions over bytes. The file is a YAML block list whose every item starts on a line
`- config-keys:` at column 1; that line is how entries are found in the raw bytes (splicing,
separators, line numbers), so the parser insists on it. Each `Entry` remembers where it was
written so that every later rule can point at a line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ci_tools.errors import Finding, InputError

ENTRY_START = re.compile(rb"^- config-keys:[^\n]*\n", re.M)
ENTRY_START_TEXT = "- config-keys:"


@dataclass(frozen=True)
class Entry:
    index: int        # 0-based position in the file
    line: int         # 1-based line of its "- config-keys:" line
    data: dict        # the parsed entry mapping
    # 1-based line of each top-level field of the entry (for located messages); not part of equality.
    key_lines: dict = field(default_factory=dict, compare=False, repr=False)


# the last answer of line_of (content, offset, line): findings come in file order, so the next call
# counts only the newlines since the last one; counting from the start each time was quadratic (16,000
# unseparated entries: 5.2 s of 10.7 in `bytes.count`)
_LAST_LINE: list = [b"", 0, 1]


def line_of(content: bytes, offset: int) -> int:
    """1-based line number of byte `offset`."""
    last, at, line = _LAST_LINE
    if content is last and offset >= at:
        line += content.count(b"\n", at, offset)
    else:
        line = content.count(b"\n", 0, offset) + 1
    _LAST_LINE[:] = (content, offset, line)
    return line


def entry_starts(content: bytes) -> list[int]:
    """Byte offsets of every `- config-keys:` line."""
    return [m.start() for m in ENTRY_START.finditer(content)]


# -- byte hygiene -------------------------------------------------------------------------------
_BAD_BYTES = (
    (b"\r", "a carriage return (CR) is not allowed; the file must use LF line endings",
     "convert the file to LF line endings (`dos2unix <file>`, or your editor's line-ending setting)"),
    (b"\t", "a TAB character is not allowed",
     "indent with spaces; inside a description write the text without tabs"),
    (b"\0", "a NUL byte is not allowed", "remove it; the changelog is plain UTF-8 text"),
)


# Other C0 controls and DEL (TAB, LF, CR and NUL have their own rules above).
_CONTROL = re.compile(rb"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ANY_CONTROL = bytes(c for c in range(32) if c != 10) + b"\x7f"


def _non_printable(content: bytes) -> int:
    """Offset of the first character YAML refuses although it is valid UTF-8 (C1 controls except NEL,
    U+FFFE, U+FFFF), found by their UTF-8 lead bytes (C2 80-84/86-9F, EF BF BE/BF); -1 if none.
    Lead-byte searches are memchr-fast, and such characters are rare."""
    hits = []
    for lead, bad in ((b"\xc2", set(range(0x80, 0xA0)) - {0x85}), (b"\xef\xbf", {0xBE, 0xBF})):
        pos = content.find(lead)
        while pos >= 0:
            nxt = pos + len(lead)
            if nxt < len(content) and content[nxt] in bad:
                hits.append(pos)
                break
            pos = content.find(lead, pos + 1)
    return min(hits, default=-1)


def byte_findings(content: bytes, file: str) -> list[Finding]:
    """Hygiene of the raw bytes: BOM, CR, TAB, NUL, UTF-8, final newline. One finding per rule."""
    found: list[Finding] = []
    if content.startswith(b"\xef\xbb\xbf"):
        found.append(Finding(file, 1, 1, "the file starts with a UTF-8 byte-order mark (BOM)",
                             "save the file as UTF-8 without a BOM"))
    if len(content.translate(None, _ANY_CONTROL)) != len(content):  # one fast scan in the usual clean case
        for bad, message, hint in _BAD_BYTES:
            pos = content.find(bad)
            if pos >= 0:
                col = pos - (content.rfind(b"\n", 0, pos) + 1) + 1
                found.append(Finding(file, line_of(content, pos), col, message, hint))
        m = _CONTROL.search(content)
        if m:
            pos = m.start()
            found.append(Finding(file, line_of(content, pos), pos - (content.rfind(b"\n", 0, pos) + 1) + 1,
                                 f"a control character (0x{content[pos]:02x}) is not allowed",
                                 "remove it; it is invisible in most editors (try `cat -A` to see it)"))
    try:
        content.decode("utf-8")
    except UnicodeDecodeError as exc:
        found.append(Finding(file, line_of(content, exc.start), None, "the file is not valid UTF-8",
                             "save the file as UTF-8"))
    else:
        pos = _non_printable(content)
        if pos >= 0:
            char = content[pos:pos + (2 if content[pos] == 0xC2 else 3)].decode("utf-8")
            found.append(Finding(file, line_of(content, pos), None,
                                 f"the character U+{ord(char):04X} is not allowed in YAML",
                                 "remove it; it is invisible in most editors"))
    if content and not content.endswith(b"\n"):  # an empty file is an empty changelog
        found.append(Finding(file, line_of(content, len(content)), None,
                             "the file does not end with a newline",
                             "end the last line with exactly one newline (\\n)"))
    return found


# YAML 1.1 (PyYAML, this gate) reads NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR as line breaks and
# a ZERO WIDTH NO-BREAK SPACE (BOM) inside a file as content; YAML 1.2 readers (the results app, editors)
# read the first three as ordinary characters. Bytes two parsers read differently are refused in new text.
_AMBIGUOUS = ((b"\xc2\x85", "NEXT LINE (NEL)"), (b"\xe2\x80\xa8", "LINE SEPARATOR"),
              (b"\xe2\x80\xa9", "PARAGRAPH SEPARATOR"), (b"\xef\xbb\xbf", "ZERO WIDTH NO-BREAK SPACE (BOM)"))


def ambiguous_findings(content: bytes, file: str, start: int = 0) -> list[Finding]:
    """Characters YAML 1.1 and 1.2 parsers read differently, at or after byte `start` (new text)."""
    found = []
    for raw, name in _AMBIGUOUS:
        pos = content.find(raw, start)
        if pos >= 0:
            col = len(content[content.rfind(b"\n", 0, pos) + 1:pos].decode("utf-8", "replace")) + 1
            found.append(Finding(file, line_of(content, pos), col,
                                 f"the character U+{ord(raw.decode()):04X} {name} is not allowed in new entries:"
                                 " YAML 1.1 and 1.2 parsers read it differently",
                                 "delete it (it is invisible in most editors); use a plain space or a new list item"))
    return sorted(found, key=lambda f: (f.line, f.col))


# -- YAML ---------------------------------------------------------------------------------------
def _parse(content: bytes, file: str, line_offset: int = 0, index_offset: int = 0) -> list[Entry]:
    """Parse `content` (hygiene already checked or not: checked again here) into entries.

    `line_offset`/`index_offset` shift reported positions when `content` is the tail of a file.
    """
    problems = byte_findings(content, file)
    if problems:
        raise InputError(problems[0].message, findings=problems)
    from ci_tools.yaml.located import load_yaml_text  # lazy: keeps `ci-tools --help` from importing yaml

    text = content.decode("utf-8")
    try:
        doc = load_yaml_text(text, file)
    except InputError as exc:
        raise InputError(exc.message, findings=[_shift(f, line_offset, "not valid YAML: ") for f in exc.findings]) from None
    data = doc.data
    if data is None:
        data = []
    if not isinstance(data, list):
        line = line_offset + (doc.value_mark(())[0] or 1)
        raise InputError("the changelog must be a YAML list", findings=[Finding(
            file, line, None, "the changelog root must be a YAML list of entries",
            f"write each entry as a list item starting with `{ENTRY_START_TEXT}` at column 1")])
    lines = text.split("\n")
    entries: list[Entry] = []
    problems = []
    for i, item in enumerate(data):
        line = doc.value_mark((i,))[0] or 1
        n = index_offset + i + 1
        if not lines[line - 1].startswith(ENTRY_START_TEXT):
            problems.append(Finding(file, line + line_offset, None,
                                    f"entry {n} does not start with a `{ENTRY_START_TEXT}` line",
                                    f"begin every entry with `{ENTRY_START_TEXT}` at column 1, in block style"
                                    " (config-keys first, then the other fields indented by two spaces)"))
            continue
        if not isinstance(item, dict):
            problems.append(Finding(file, line + line_offset, None, f"entry {n} is not a mapping",
                                    "an entry is a mapping with config-keys, description and pr-link"))
            continue
        key_lines: dict = {k: (doc.key_marks.get((i, k), (line, 0))[0] + line_offset) for k in item}
        for name, value in item.items():
            if isinstance(value, list):  # list items are located too (config-keys, description, scenario-type)
                for j in range(len(value)):
                    key_lines[(name, j)] = (doc.value_marks[(i, name, j)][0] + line_offset
                                            if (i, name, j) in doc.value_marks else key_lines[name])
        entries.append(Entry(index_offset + i, line + line_offset, item, key_lines))
    if not problems:
        starts = entry_starts(content)
        if len(starts) != len(data):
            known = {e.line - line_offset for e in entries}
            stray = [line_of(content, s) for s in starts if line_of(content, s) not in known]
            where = stray[0] if stray else line_of(content, starts[-1]) if starts else 1
            problems.append(Finding(file, where + line_offset, None,
                                    f"a line starting with `{ENTRY_START_TEXT}` is not the start of an entry"
                                    f" ({len(starts)} such lines, {len(data)} entries)",
                                    f"only entry starts may begin with `{ENTRY_START_TEXT}` at column 1;"
                                    " indent text inside a block scalar"))
    if problems:
        raise InputError(problems[0].message, findings=problems)
    return entries


def _shift(f: Finding, line_offset: int, prefix: str) -> Finding:
    message = f.message
    if message.startswith("malformed YAML: "):
        message = message[len("malformed YAML: "):]
    if line_offset:  # line numbers quoted inside the message are relative to the parsed region too
        message = re.sub(r"(at line )(\d+)", lambda m: f"{m.group(1)}{int(m.group(2)) + line_offset}", message)
    return Finding(f.file, None if f.line is None else f.line + line_offset, f.col, prefix + message,
                   f.hint or "check the quoting and indentation of the new lines")


def parse_entries(content: bytes, file: str) -> list[Entry]:
    """All entries of a changelog. InputError with located findings on hygiene, YAML or shape problems.

    No schema validation here (history is a log, not a spec: old entries name configs that no
    longer exist); new entries are validated by `ci_tools.changelog.schema`.
    """
    return _parse(content, file)


def count_entries(content: bytes) -> int:
    """Number of entries, counted by their start lines (valid for a file that parses)."""
    return len(ENTRY_START.findall(content))


def appended_entries(base: bytes | None, head: bytes, file: str) -> list[Entry]:
    """The entries of `head` past the last entry of `base` (all of them when base is None).

    Assumes the lint passed (head = base + appended entries); only the appended region is parsed,
    so it is cheap on a large file. Indexes and lines are those in `head`.
    """
    n = count_entries(base) if base else 0
    starts = entry_starts(head)
    if n >= len(starts):
        return []
    return parse_tail(head, starts[n], n, file)


def parse_tail(content: bytes, offset: int, index_offset: int, file: str) -> list[Entry]:
    """Parse only content[offset:] (which starts with an entry), reporting lines and indexes of `content`."""
    return _parse(content[offset:], file, line_offset=line_of(content, offset) - 1, index_offset=index_offset)


def structure_ok(content: bytes, n_starts: int | None = None) -> bool:
    """Cheap whole-file check: valid YAML, one document, a list of mappings without duplicate or
    non-scalar keys, one entry per `- config-keys:` line.

    Walks the C parser's event stream and constructs nothing (about a third of a full load); when it
    fails, `parse_entries` finds and words the problem. `n_starts`: the number of `- config-keys:`
    lines when the caller already counted them. Keys are compared as written, so `1` and
    `"1"` count as the same key here: stricter than YAML, never looser.
    """
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
    seq_start, map_start = yaml.SequenceStartEvent, yaml.MappingStartEvent
    seq_end, map_end = yaml.SequenceEndEvent, yaml.MappingEndEvent
    doc_start = yaml.DocumentStartEvent
    # frames: [keys, expecting_key] for mappings, None for sequences
    stack: list = []
    items = docs = 0
    try:
        for event in yaml.parse(content, Loader=loader_cls):
            kind = type(event)
            if kind is doc_start:
                docs += 1
                if docs > 1:
                    return False
                continue
            if kind is seq_end or kind is map_end:
                stack.pop()
                if stack and stack[-1] is not None:
                    stack[-1][1] = True  # the collection was a mapping value: a key comes next
                continue
            if kind is not scalar and kind is not alias and kind is not seq_start and kind is not map_start:
                continue  # stream/document boundaries
            if not stack:
                if kind is not seq_start:
                    return False  # the root must be a list
                stack.append(None)
                continue
            top = stack[-1]
            if top is None and len(stack) == 1:
                if kind is not map_start:
                    return False  # every entry is a mapping
                items += 1
            elif top is not None:
                if top[1]:  # a key
                    if kind is not scalar or event.value in top[0]:
                        return False
                    top[0].add(event.value)
                    top[1] = False
                    continue
                if kind is scalar or kind is alias:
                    top[1] = True
            if kind is seq_start:
                stack.append(None)
            elif kind is map_start:
                stack.append([set(), True])
    except yaml.YAMLError:
        return False
    return (len(entry_starts(content)) if n_starts is None else n_starts) == items
