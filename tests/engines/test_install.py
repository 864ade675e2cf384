"""The install guard of a recipe's `install:` requirements (ci_tools/engines/install.py), run for real:
pip installs a hash-pinned wheel once into the job's folder while two commands start at the same time,
both then import it, and a wrong hash stops the command before it starts."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ci_tools.engines import install


def _wheel(folder: Path) -> tuple[Path, str]:
    """A one-module wheel (cit_probe 1.0), and its sha256."""
    files = {"cit_probe.py": b"WHERE = __file__\n",
             "cit_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: cit-probe\nVersion: 1.0\n",
             "cit_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()},{len(b)}\n"
                     for n, b in files.items()) + "cit_probe-1.0.dist-info/RECORD,,\n"
    path = folder / "cit_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for n, b in files.items():
            z.writestr(n, b)
        z.writestr("cit_probe-1.0.dist-info/RECORD", record)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _start(argv: list[str], wheels: Path) -> subprocess.Popen:
    argv = [sys.executable if a == "python3" else a for a in argv]
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_commands_install_once_and_both_import_it(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _, sha = _wheel(wheels)
    target = tmp_path / "job" / "site"
    reqs = [f"cit-probe==1.0 --hash=sha256:{sha}"]
    assert not install.requirement_problems(reqs)
    cmd = ["python3", "-c", "import cit_probe; print(cit_probe.WHERE)"]
    procs = [_start(install.wrap(cmd, str(target), reqs), wheels) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all(out.splitlines()[-1] == str(target / "cit_probe.py") for out, _ in outs), outs
    assert sum("Successfully installed cit-probe" in out + err for out, err in outs) == 1
    assert (target / ".complete").read_text() == reqs[0] + "\n"
    assert install.unwrap(install.wrap(cmd, str(target), reqs)) == cmd


def test_a_wrong_hash_stops_the_command(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels)
    reqs = ["cit-probe==1.0 --hash=sha256:" + "0" * 64]
    proc = _start(install.wrap(["python3", "-c", "print('started')"], str(tmp_path / "site"), reqs), wheels)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode != 0 and "started" not in out
    assert "DO NOT MATCH THE HASHES" in err and "installing the recipe requirements" in err


@pytest.mark.parametrize("reqs,bad", [
    (["ai-dynamo==1.6.1 --hash=sha256:" + "a" * 64], 0),
    (["ai-dynamo==1.6.1"], 1),                                   # no hash
    (["ai-dynamo>=1.6 --hash=sha256:" + "a" * 64], 1),           # not one version
    (["ai-dynamo==1.6.1 --hash=sha256:abc"], 1),
    ("ai-dynamo==1.6.1", 1),
])
def test_requirements_must_be_pinned_by_version_and_hash(reqs, bad):
    assert len(install.requirement_problems(reqs)) == bad


def test_the_recipe_schema_checks_install_with_the_same_rule_and_says_how_to_pin():
    """One rule: the disaggregated schema's pattern for `install` items is install.PINNED, and
    `config validate` names the fix for an unpinned line (not only "an invalid form")."""
    from ci_tools.config import schemas
    from ci_tools.yaml.located import load_yaml_text

    schema = schemas.schema("disagg-recipe")
    assert schema["$defs"]["frontend"]["properties"]["install"]["items"]["pattern"] == install.PINNED.pattern
    doc = load_yaml_text("frontend:\n  install:\n  - ai-dynamo==1.6.1\n", "r.yaml")
    found = [f for f in schemas.check(doc, doc.data, "disagg-recipe") if "install" in f.message]
    assert found and "pinned by version and hash" in found[0].message and "--hash=sha256" in found[0].hint, found
