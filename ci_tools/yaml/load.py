"""YAML files -> `YamlDoc`: the file reads of the YAML package (shell: the parse itself is
`ci_tools.yaml.located`). Unreadable, missing and non-UTF-8 files are InputErrors with a location."""

from __future__ import annotations

from pathlib import Path

from ci_tools.errors import Finding, InputError
from ci_tools.yaml.located import MAX_YAML_FILE_BYTES, YamlDoc, load_yaml_text, too_big



def read_text(path: Path | str, display: str | None = None) -> str:
    """Read a UTF-8 text file, turning I/O and decoding problems into InputError."""
    p = Path(path)
    name = display or str(path)
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_YAML_FILE_BYTES + 1)    # never more: a FIFO or /dev/zero would not end
    except FileNotFoundError:
        raise InputError(f"{name}: file not found", findings=[Finding(name, None, None, "file not found",
                                                                       "check the path (and the directory it is run from)")],
                         exit_code=2) from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory, expected a YAML file",
                         findings=[Finding(name, None, None, "is a directory, expected a YAML file")]) from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read: {exc.strerror}",
                         findings=[Finding(name, None, None, f"cannot read: {exc.strerror}")]) from None
    if len(raw) > MAX_YAML_FILE_BYTES:
        raise too_big(name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{name}:{line}: not valid UTF-8",
                         findings=[Finding(name, line, None, "not valid UTF-8 text", "save the file as UTF-8")]) from None


def load_yaml_file(path: Path | str, display: str | None = None) -> YamlDoc:
    name = display or str(path)
    return load_yaml_text(read_text(path, name), name)
