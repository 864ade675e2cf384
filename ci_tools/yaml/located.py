"""YAML text -> data with line marks, under strict input hygiene (pure: no file is read here).

Every config file goes through `load_yaml_text` (files: `ci_tools.yaml.load.load_yaml_file`). The result keeps, for every path
into the data (a tuple of keys and indexes), the 1-based line and column where it was written, so
that validators can report `file:line:col` without re-parsing. PyYAML's C parser is used when the
platform has it (it is several times faster on the 395 KB changelog); the Python one otherwise.

Rejected with a located message: malformed YAML, duplicate mapping keys (PyYAML silently keeps
the last one), TAB and NUL characters, a byte-order mark, unhashable keys, a tag on a list or mapping
(it would be silently dropped), a scalar PyYAML cannot construct (`0x_`, `2024-13-45`), a recursive
alias, nesting deeper than MAX_DEPTH, and aliases that expand to more than the budget below: a
few hundred bytes of nested aliases otherwise expand to millions of values (a "billion laughs").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ci_tools.errors import Finding, InputError

# PyYAML is imported by the first parse that needs it, not with this module: importing it costs more
# than `matrix full-sweep` spends reading both masters through `ci_tools.yaml.fast`.
yaml: Any = None
_Loader: Any = None
_MemoLoader: Any = None


def ensure_pyyaml() -> None:
    """Import PyYAML (as this module's `yaml`) and define the loaders built on it (once)."""
    global yaml, _Loader, _MemoLoader
    if _MemoLoader is not None:
        return
    import yaml as module

    # the C parser when PyYAML was built with it, the Python one otherwise
    loader = getattr(module, "CSafeLoader", module.SafeLoader)

    class MemoLoader(loader):  # type: ignore[misc, valid-type]
        """The safe loader with the implicit-tag lookup of plain scalars memoised by value: in a master
        config the same few thousand values (`tp`, `8`, `true`, image names) recur, and the lookup is the
        costliest Python step of composing the document. Only the value decides the tag there."""

        _tags: dict[str, str] = {}

        def resolve(self, kind, value, implicit):  # noqa: D102
            if kind is module.ScalarNode and implicit[0]:
                tag = self._tags.get(value)
                if tag is None:
                    tag = self._tags[value] = super().resolve(kind, value, implicit)
                return tag
            return super().resolve(kind, value, implicit)

    yaml, _Loader, _MemoLoader = module, loader, MemoLoader


def memo_loader(text: str) -> Any:
    """PyYAML's safe loader (C when built) over `text`, plain-scalar tags memoised (data-only reads)."""
    ensure_pyyaml()
    return _MemoLoader(text)

Path_ = tuple  # a path into the data: ("key", 0, "sub-key")

# Nesting deeper than this is refused (configs and the changelog nest fewer than 10 levels); it keeps
# the recursive builders far from Python's recursion limit whatever the input.
MAX_DEPTH = 64
# The largest file of InferenceX's configs is its nvidia master (0.32 MB; its changelog 0.40 MB): 8 MiB
# is 25 times that, and bounds what one YAML file may cost (a 10 MB flow mapping took 7.7 s, 0.78 GB).
# Held by the file reader (`load.read_text`, in bytes) and by both parsers (in characters, each at
# least a byte), so a text read from git (the changelog, masters at a ref) is bounded too.
MAX_YAML_FILE_BYTES = 8 * 1024 * 1024


def too_big(file: str) -> InputError:
    message = f"more than {MAX_YAML_FILE_BYTES:,} bytes, the limit for one YAML file"
    return InputError(f"{file}: {message}", findings=[Finding(
        file, None, None, message, "split it (one master file per model family, one recipe per configuration)"
        " or check that the path names the file you meant")])
# Values that aliases may add beyond the written nodes: at most ALIAS_FACTOR x the written nodes plus
# ALIAS_SLACK. Bounds the build (and everything that walks the data after it) linearly in the input.
ALIAS_FACTOR = 4
ALIAS_SLACK = 10_000
MAP_TAG = "tag:yaml.org,2002:map"
_PLAIN_TAGS = tuple(f"tag:yaml.org,2002:{kind}" for kind in ("str", "int", "float", "bool", "null"))
SEQ_TAG = "tag:yaml.org,2002:seq"


@dataclass
class YamlDoc:
    """Parsed YAML plus where each value (and each mapping key) was written."""

    file: str
    data: Any
    value_marks: dict[tuple, tuple[int, int]] = field(default_factory=dict)
    key_marks: dict[tuple, tuple[int, int]] = field(default_factory=dict)

    def mark(self, path: tuple) -> tuple[int | None, int | None]:
        """Line and column of `path`, or of its nearest written ancestor."""
        path = tuple(path)
        while True:
            if path in self.key_marks:
                return self.key_marks[path]
            if path in self.value_marks:
                return self.value_marks[path]
            if not path:
                return (None, None)
            path = path[:-1]

    def value_mark(self, path: tuple) -> tuple[int | None, int | None]:
        path = tuple(path)
        if path in self.value_marks:
            return self.value_marks[path]
        return self.mark(path)

    def finding(self, path: tuple, message: str, hint: str = "", severity: str = "error") -> Finding:
        line, col = self.mark(path)
        return Finding(self.file, line, col, message, hint, severity)


def graph_problem(root: Any, file: str) -> Finding | None:
    """The first reason not to build `root`: a recursive alias, nesting deeper than MAX_DEPTH, or an
    alias expansion above the budget. One iterative pass over the distinct nodes (shared ones are
    counted once with their expanded size), so a bomb costs as little to refuse as it is long.
    Only documents with an anchor (`&`) can alias, and only they pay for this pass."""
    size: dict[int, int] = {}  # id(node) -> number of values it expands to
    on_path: set[int] = set()  # the current node's ancestors (a node met again here is a cycle)
    stack: list = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        nid = id(node)
        if done:
            on_path.discard(nid)
            total = 1
            for child in _children(node):
                total += size[id(child)]
            size[nid] = total
            continue
        if nid in size:
            continue
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
        if nid in on_path:
            return Finding(file, line, col, "a recursive alias: this value contains itself",
                           "replace the alias (`*name`) by the values it should hold")
        if depth > MAX_DEPTH:
            return Finding(file, line, col, f"values nested more than {MAX_DEPTH} levels deep",
                           "flatten the structure; configs nest only a few levels")
        on_path.add(nid)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in _children(node) if id(child) not in size)
    written = len(size)
    if size[id(root)] > ALIAS_FACTOR * written + ALIAS_SLACK:
        return Finding(file, None, None,
                       f"aliases expand {written} written values to {size[id(root)]}, more than this tool reads",
                       "write the values out instead of nesting aliases (`*name`) of aliases")
    return None


def _children(node: Any) -> list:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return []


class _Builder:
    def __init__(self, loader: Any, doc: YamlDoc, shared: bool = True):
        self.loader = loader
        self.doc = doc
        self.errors: list[Finding] = []
        # Without anchors no node is reached twice: each node is let go once built, so the node graph
        # and the data are not both whole in memory (a 10 MB flow mapping: 1.03 GB -> see load_yaml_text)
        self.release = not shared
        # the plain scalars' constructors (the others, generators among them, go through construct_object)
        self.scalars = {tag: loader.yaml_constructors[tag] for tag in _PLAIN_TAGS}

    def construct(self, node: yaml.Node) -> Any:
        """A scalar (or key) value; a scalar PyYAML resolves but cannot construct becomes a finding."""
        try:
            make = self.scalars.get(node.tag) if isinstance(node, yaml.ScalarNode) else None
            if make is not None:  # PyYAML's own constructor, without construct_object's cache of every node
                return make(self.loader, node)
            return self.loader.construct_object(node, deep=True)
        except (ValueError, OverflowError, TypeError) as exc:  # e.g. `0x_`, `2024-13-45`, `._`
            self.errors.append(Finding(self.doc.file, node.start_mark.line + 1, node.start_mark.column + 1,
                                       f"cannot read the value {node.value!r} ({exc})" if isinstance(node.value, str)
                                       else f"cannot read this value ({exc})",
                                       "quote it if it is text"))
            return None

    def build(self, node: yaml.Node, path: tuple) -> Any:
        self.doc.value_marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if len(path) >= MAX_DEPTH:
            raise _TooDeep(node)
        if not isinstance(node, yaml.ScalarNode) and node.tag not in (MAP_TAG, SEQ_TAG):
            self.errors.append(Finding(self.doc.file, node.start_mark.line + 1, node.start_mark.column + 1,
                                       f"the YAML tag {node.tag.replace('tag:yaml.org,2002:', '!!')} is not supported"
                                       " on a list or mapping (it would be ignored)",
                                       "remove the tag; write the value as a plain list or mapping"))
        if isinstance(node, yaml.MappingNode):
            # Keys written in this mapping, as opposed to keys pulled in by a `<<:` merge. A written key
            # may override a merged one (that is what merge keys are for); only two written keys clash.
            own = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
            self.loader.flatten_mapping(node)  # resolves YAML merge keys (<<)
            out: dict = {}
            first_seen: dict = {}
            pairs = node.value
            if self.release:
                node.value = []
            for i, (key_node, value_node) in enumerate(pairs):
                if self.release:
                    pairs[i] = None
                if id(key_node) not in own:
                    key = self.construct(key_node)
                    try:
                        hash(key)
                    except TypeError:
                        continue
                    self.doc.key_marks[path + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                    out[key] = self.build(value_node, path + (key,))
                    continue
                key = self.construct(key_node)
                kline = key_node.start_mark.line + 1
                kcol = key_node.start_mark.column + 1
                try:
                    hash(key)
                except TypeError:
                    self.errors.append(Finding(self.doc.file, kline, kcol,
                                               "a mapping key must be a plain value, not a list or mapping",
                                               "write the key as a string"))
                    continue
                if key in first_seen:
                    self.errors.append(Finding(
                        self.doc.file, kline, kcol,
                        f"duplicate key {key!r} (first written at line {first_seen[key]})",
                        "remove one of the two; YAML keeps only the last, so the first is silently lost"))
                    continue
                first_seen[key] = kline
                at = path + (key,)
                self.doc.key_marks[at] = (kline, kcol)
                out[key] = self.build(value_node, at)
            return out
        if isinstance(node, yaml.SequenceNode):
            items = node.value
            if not self.release:
                return [self.build(item, path + (i,)) for i, item in enumerate(items)]
            node.value = []
            out_list = []
            for i, item in enumerate(items):
                items[i] = None
                out_list.append(self.build(item, path + (i,)))
            return out_list
        return self.construct(node)


def _hygiene(file: str, text: str) -> list[Finding]:
    found: list[Finding] = []
    if text.startswith("\ufeff"):
        found.append(Finding(file, 1, 1, "the file starts with a byte-order mark (BOM)",
                             "save the file as UTF-8 without BOM"))
    for bad, name, hint in (("\t", "a TAB character", "indent with spaces; write \\t inside a quoted string if a tab is meant"),
                            ("\x00", "a NUL byte", "remove it; the file must be plain text")):
        pos = text.find(bad)
        if pos >= 0:
            line = text.count("\n", 0, pos) + 1
            col = pos - (text.rfind("\n", 0, pos) + 1) + 1
            found.append(Finding(file, line, col, f"{name} is not allowed", hint))
    return found


def load_yaml_text(text: str, file: str = "<input>") -> YamlDoc:
    """Parse `text`. Raises InputError carrying located findings on any problem."""
    if len(text) > MAX_YAML_FILE_BYTES:
        raise too_big(file)
    problems = _hygiene(file, text)
    if problems:
        raise InputError(problems[0].message, findings=problems)
    doc = YamlDoc(file, None)
    ensure_pyyaml()
    loader = _MemoLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            doc.data = None
            return doc
        problem = graph_problem(node, file) if "&" in text else None
        if problem is not None:
            raise InputError(problem.message, findings=[problem])
        builder = _Builder(loader, doc, shared="&" in text)
        doc.data = builder.build(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        what = exc.problem or "malformed YAML"
        if exc.context:
            what = f"{exc.context}: {what}"
        raise InputError(f"malformed YAML: {what}", findings=[Finding(
            file, line, col, f"malformed YAML: {what}",
            "check the indentation and quoting around this line")]) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", findings=[Finding(file, None, None, f"malformed YAML: {exc}")]) from None
    except _TooDeep as exc:
        mark = exc.args[0].start_mark
        raise InputError(f"values nested more than {MAX_DEPTH} levels deep", findings=[Finding(
            file, mark.line + 1, mark.column + 1, f"values nested more than {MAX_DEPTH} levels deep",
            "flatten the structure; configs nest only a few levels")]) from None
    except RecursionError:  # the parser's own nesting (MAX_DEPTH guards the builder): still a clean refusal
        raise InputError("values nested too deeply", findings=[Finding(
            file, None, None, "values nested too deeply to read", "flatten the structure")]) from None
    finally:
        loader.dispose()
    if builder.errors:
        raise InputError(builder.errors[0].message, findings=builder.errors)
    return doc


class _TooDeep(Exception):
    """Raised by the located builder at the first node nested deeper than MAX_DEPTH."""
