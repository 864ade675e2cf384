"""What a recipe installs into an image that lacks it (Dynamo is not in the lmsysorg/sglang images).

A disaggregated recipe's Dynamo frontend may list `install:` requirements, each pinned by version and
sha256 in pip's own requirement syntax (`ai-dynamo==1.6.1 --hash=sha256:<64 hex>`; one `--hash` per
platform wheel). Every worker and frontend command of the job then starts through GUARD: the first
process to take the lock on the job directory's install folder runs `pip install --no-deps
--require-hashes --target` there, the others wait and find it done, and each puts the folder first on
PYTHONPATH and execs its own command. So pip runs once per job, assuming (as Dynamo's file store does)
that the job directory is one shared filesystem on every node, with flock working across them
(docs/runner-operator.md); pip refuses a wheel whose hash differs, and the dry run shows the command.

Pure: the argv builder and the requirement check.
"""

from __future__ import annotations

import re

# `python3 -c GUARD TARGET N REQ1 .. REQn CMD...` (double quotes only: the dry run shows it in single ones)
GUARD = '''import fcntl, os, subprocess, sys, tempfile
t, n = sys.argv[1], int(sys.argv[2])
reqs, cmd = sys.argv[3:3 + n], sys.argv[3 + n:]
os.makedirs(t, exist_ok=True)
with open(t + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not os.path.exists(os.path.join(t, ".complete")):
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write("\\n".join(reqs) + "\\n")
            f.flush()
            rc = subprocess.call([sys.executable, "-m", "pip", "install", "--no-deps", "--require-hashes",
                                  "--no-input", "--target", t, "-r", f.name])
        if rc:
            sys.exit(f"ci-tools: installing the recipe requirements into {t} failed (pip exit {rc})")
        open(os.path.join(t, ".complete"), "w").write("\\n".join(reqs) + "\\n")
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (t, os.environ.get("PYTHONPATH")) if p)
os.execvp(cmd[0], cmd)
'''

PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+( --hash=sha256:[0-9a-f]{64})+$")


def wrap(argv: list[str], target: str, requirements: list[str]) -> list[str]:
    """ARGV started after REQUIREMENTS are installed into TARGET (once for all the job's commands)."""
    if not requirements:
        return list(argv)
    return ["python3", "-c", GUARD, target, str(len(requirements)), *requirements, *argv]


def unwrap(argv: list[str]) -> list[str]:
    """The command a wrapped argv runs (the argv itself when it is not wrapped)."""
    if argv[:3] != ["python3", "-c", GUARD]:
        return list(argv)
    return list(argv[5 + int(argv[4]):])


def requirement_problems(requirements: object) -> list[str]:
    """Why an `install:` list cannot be installed as pinned (empty: it can)."""
    if not isinstance(requirements, list):
        return ["`install` is a list of pinned requirements"]
    return [f"install entry {r!r} is not pinned: write `name==version --hash=sha256:<64 hex>` (one --hash per "
            "platform wheel; `pip hash FILE` or the index's sha256 gives it)"
            for r in requirements if not isinstance(r, str) or not PINNED.match(r)]
