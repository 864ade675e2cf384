import pytest

from ci_tools.errors import InputError
from ci_tools.yaml.located import load_yaml_text


def test_marks_point_at_keys_and_values():
    doc = load_yaml_text("a:\n  b: 1\n  c:\n    - x\n    - y\n", "f.yaml")
    assert doc.data == {"a": {"b": 1, "c": ["x", "y"]}}
    assert doc.mark(("a", "b")) == (2, 3)
    assert doc.mark(("a", "c", 1)) == (5, 7)
    assert doc.mark(("a", "missing")) == (1, 1)


@pytest.mark.parametrize("text, line, fragment", [
    ("a: 1\na: 2\n", 2, "duplicate key 'a' (first written at line 1)"),
    ("a:\n\tb: 1\n", 2, "TAB character"),
    ("\ufeffa: 1\n", 1, "byte-order mark"),
    ("a: [1, 2\n", 2, "malformed YAML"),
    ("a: 1\x00\n", 1, "NUL byte"),
    ("? [1, 2]\n: x\n", 1, "mapping key must be a plain value"),
])
def test_bad_yaml_is_located(text, line, fragment):
    with pytest.raises(InputError) as info:
        load_yaml_text(text, "f.yaml")
    finding = info.value.findings[0]
    assert finding.file == "f.yaml"
    assert finding.line == line
    assert fragment in finding.message
