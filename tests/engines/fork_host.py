"""Starts Dynamo parser processes (dynamo_host.py) as forks of one process that has already imported torch.

Every Dynamo parser process imports its worker over torch, and importing torch is a third of its seconds: the
compatibility table alone starts one per (Dynamo release, engine release) row. This process, run in the torch
venv with the environment a parser process gets but none of its wheel folders on PYTHONPATH (each request
names its own: the Dynamo release's, its engine's and the engine's harness.ENGINE_ENV pins), imports torch
once; then, for each line on stdin,

    {"paths": [wheel folder, ...], "argv": [dynamo_host.py, parser], "stdin": F, "stdout": F, "stderr": F}

it forks a child that is what `python dynamo_host.py PARSER` would be with PATHS ahead of its own on
PYTHONPATH and those files as its standard streams, and answers {"rc": its exit status} when it has ended.
Each child is fresh: nothing of one run is seen by the next, so each answers exactly as its own process did
(tests/engines/test_fork_host.py compares them). A path that would shadow a module imported here is refused:
that child would not be what its own process is.
"""

from __future__ import annotations

import atexit
import gc
import io
import json
import os
import runpy
import sys
import traceback

# what is imported before the fork: every Dynamo worker imports it, and none of the wheel folders has it
PRELOAD = ("torch",)


def _shadowed(paths: list[str]) -> list[str]:
    """The preloaded top-level modules that one of PATHS also holds (its copy would win in a fresh process)."""
    tops = {name.split(".")[0] for name in sys.modules}
    found = []
    for path in paths:
        for entry in os.listdir(path) if os.path.isdir(path) else ():
            name = entry.split(".")[0]
            if name in tops and (os.path.isdir(os.path.join(path, entry)) or entry.endswith((".py", ".so"))):
                found.append(os.path.join(path, entry))
    return found


def _child(request: dict) -> int:
    """Become `python ARGV[0] ARGV[1:]` with REQUEST's paths first on PYTHONPATH; returns its exit status."""
    for fd, name, mode in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        opened = os.open(request[name], mode)
        os.dup2(opened, fd)
        os.close(opened)
    # fresh stream objects over the new descriptors, as a new interpreter makes them
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                                 encoding=sys.stdin.encoding, errors=sys.stdin.errors)
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                                   encoding=sys.stdout.encoding, errors=sys.stdout.errors)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                                   encoding=sys.stderr.encoding, errors=sys.stderr.errors,
                                                   line_buffering=True)
    gc.enable()                    # the host's objects stay frozen: the child's collections never walk them
    paths = list(request["paths"])
    shadowed = _shadowed(paths)
    if shadowed:
        sys.stderr.write(f"fork_host: {', '.join(shadowed)} would shadow a module imported before the fork\n")
        return 3
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, os.environ.get("PYTHONPATH", "").split(
        os.pathsep))])
    sys.path[1:1] = paths          # after the script's folder, ahead of this process's PYTHONPATH, as a new one
    import importlib

    importlib.invalidate_caches()
    sys.argv = list(request["argv"])
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            sys.stderr.write(f"{exc.code}\n")
    except BaseException:          # noqa: BLE001 - as the interpreter does: the traceback, exit 1
        traceback.print_exc()
        code = 1
    return code


def main() -> int:
    # Python's own recipe for a process that forks without exec (gc.freeze's documentation): no collection
    # while torch is imported, then its objects moved out of the collector's reach. Each child collects its own
    # objects as usual, but never walks torch's: a third of a child's CPU was spent in collections that walked
    # them (and copied the pages they are on). What a child imports and runs is unchanged.
    gc.disable()
    for name in PRELOAD:
        __import__(name)
    gc.freeze()
    control = sys.stdout
    control.write("ready\n")
    control.flush()
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _child(request)
            finally:
                try:
                    atexit._run_exitfuncs()      # what the interpreter runs at exit (logging's flush among them)
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        _, status = os.waitpid(pid, 0)
        control.write(json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n")
        control.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
