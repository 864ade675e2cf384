"""A small evaluator of GitHub Actions expressions, enough for the `if:` strings of our workflows.

Our `if:` strings only compare job outputs, job results and a few event fields, so the subset is
small; it keeps GitHub's semantics where they bite: string comparison ignores case, `&&`/`||`
return an operand, missing properties are null, and an `if:` without a status function means
`success() && (...)`. Anything outside the subset raises, so a workflow cannot silently grow an
expression these tests do not understand.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>'(?:[^']|'')*')
    | (?P<num>-?\d+(?:\.\d+)?)
    | (?P<op>==|!=|<=|>=|&&|\|\||[!<>(),.\[\]])
    | (?P<name>[A-Za-z_][\w-]*)
    )""", re.X)

STATUS_FUNCTIONS = ("always", "success", "failure", "cancelled")


class ExprError(ValueError):
    pass


@dataclass
class Status:
    """What the status functions see: the results of the jobs in `needs`, and run cancellation."""
    needs_results: tuple[str, ...] = ()
    cancelled: bool = False


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(f"cannot read expression at {text[pos:]!r}")
        kind = m.lastgroup
        tokens.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return tokens


def truthy(value) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (None, False, 0, "")


def to_number(value) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip()) if value.strip() else 0.0
        except ValueError:
            return math.nan
    return math.nan


def equal(a, b) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    if type(a) is type(b):
        return a == b
    return to_number(a) == to_number(b)


class Parser:
    def __init__(self, text: str, context: dict, status: Status):
        self.tokens = tokenize(text)
        self.i = 0
        self.context = context
        self.status = status
        self.uses_status = False

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def take(self, value: str | None = None):
        token = self.peek()
        if value is not None and token[1] != value:
            raise ExprError(f"expected {value!r}, found {token[1]!r}")
        self.i += 1
        return token

    def parse(self):
        value = self.or_()
        if self.i != len(self.tokens):
            raise ExprError(f"unexpected {self.peek()[1]!r}")
        return value

    def or_(self):
        value = self.and_()
        while self.peek()[1] == "||":
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self):
        value = self.compare()
        while self.peek()[1] == "&&":
            self.take()
            right = self.compare()
            value = right if truthy(value) else value
        return value

    def compare(self):
        value = self.unary()
        while self.peek()[1] in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()[1]
            right = self.unary()
            if op == "==":
                value = equal(value, right)
            elif op == "!=":
                value = not equal(value, right)
            else:
                a, b = to_number(value), to_number(right)
                value = {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
        return value

    def unary(self):
        if self.peek()[1] == "!":
            self.take()
            return not truthy(self.unary())
        return self.postfix()

    def postfix(self):
        value = self.primary()
        while self.peek()[1] in (".", "["):
            if self.take()[1] == ".":
                kind, name = self.take()
                if kind != "name":
                    raise ExprError(f"expected a property name, found {name!r}")
                value = value.get(name) if isinstance(value, dict) else None
            else:
                key = self.or_()
                self.take("]")
                value = value.get(key) if isinstance(value, dict) else None
        return value

    def primary(self):
        kind, text = self.take()
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if text == "(":
            value = self.or_()
            self.take(")")
            return value
        if kind == "name":
            if text in ("true", "false"):
                return text == "true"
            if text == "null":
                return None
            if self.peek()[1] == "(":
                return self.call(text)
            if text not in self.context:
                raise ExprError(f"unknown context {text!r}")
            return self.context[text]
        raise ExprError(f"unexpected {text!r}")

    def call(self, name: str):
        self.take("(")
        args = []
        while self.peek()[1] != ")":
            args.append(self.or_())
            if self.peek()[1] == ",":
                self.take()
        self.take(")")
        if name in STATUS_FUNCTIONS:
            self.uses_status = True
            results = self.status.needs_results
            return {
                "always": True,
                "cancelled": self.status.cancelled,
                "success": not self.status.cancelled and all(r == "success" for r in results),
                "failure": any(r == "failure" for r in results),
            }[name]
        if name == "contains":
            hay, needle = args
            if isinstance(hay, list):
                return any(equal(item, needle) for item in hay)
            return str(needle).lower() in str(hay).lower()
        if name == "startsWith":
            return str(args[0]).lower().startswith(str(args[1]).lower())
        if name == "fromJson":
            return json.loads(args[0])
        if name == "toJson":
            return json.dumps(args[0], indent=2)
        if name == "format":
            return re.sub(r"\{(\d+)\}", lambda m: _as_text(args[1 + int(m.group(1))]), str(args[0]))
        raise ExprError(f"function {name}() is not supported by these tests")


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2)
    return str(value)


def strip_braces(text: str) -> str:
    text = text.strip()
    if text.startswith("${{") and text.endswith("}}"):
        return text[3:-2]
    return text


def evaluate(text: str, context: dict, status: Status | None = None):
    return Parser(strip_braces(text), context, status or Status()).parse()


def job_runs(condition: str | bool | None, context: dict, status: Status) -> bool:
    """GitHub's rule for a job's `if:`: without a status function it is `success() && (...)`."""
    if condition is None:
        return not status.cancelled and all(r == "success" for r in status.needs_results)
    if isinstance(condition, bool):
        condition = "true" if condition else "false"
    parser = Parser(strip_braces(condition), context, status)
    value = truthy(parser.parse())
    if not parser.uses_status:
        value = value and not status.cancelled and all(r == "success" for r in status.needs_results)
    return value


def interpolate(text: str, context: dict) -> str:
    """Expand `${{ }}` in a string value (job outputs, env), as GitHub does, to a string."""
    def one(m: re.Match) -> str:
        return _as_text(evaluate(m.group(1), context))
    return re.sub(r"\$\{\{(.*?)\}\}", one, text)
