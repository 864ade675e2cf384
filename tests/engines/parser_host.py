"""Builds an engine's own command-line parser from its released wheel and parses argv lists with it.

Runs inside the engines virtualenv (`.venv-engines`, made by dev.py), never inside the ci-tools venv:
the wheel is on PYTHONPATH (installed --no-deps into its own folder), and the heavy runtime packages
it imports at module level (torch, triton, CUDA bindings, ...) are replaced by inert stand-ins. Only
imports made *by the engine's own code* are stood in for; a library's optional `try: import x` keeps
its normal ImportError, so the light dependencies behave as in a real install.

What this checks: argparse, exactly as the engine's launcher builds it (unknown, ambiguous, malformed
or out-of-choice options exit 2 here exactly as on the server). What it cannot check: the engine's later
validation (GPU, model config, cross-option rules in __post_init__).

Protocol (JSON lines, so one process serves a whole test session): argv[1] names the parser; the first
line out is {"version": V, "options": [...], "stood-in": [...]}; then each line in, {"argvs": [[...], ...]},
gets one line out, {"results": [{"ok": bool, "error": str, "deprecated": [...]}, ...]}.
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import io
import json
import sys
import types
import warnings

# Packages whose code may ask for a stand-in (the engines and routers under test).
OWNERS = ("sglang", "sglang_router", "smg", "vllm", "vllm_router", "tensorrt_llm", "atom")
# Versions reported by stand-ins whose version the engine compares at import time.
STUB_VERSIONS = {"torch": "2.9.1", "triton": "3.5.0", "flashinfer": "0.5.3", "transformers": "4.57.1"}
# Attributes a stand-in must *not* have: engines probe `hasattr(torch, "npu")` to pick a platform.
STUB_ABSENT = {"torch": {"npu"}}
# Packages whose mere presence switches an engine to another platform (MUSA, Ascend): never stood in.
NEVER_STAND_IN = {"torchada", "torch_npu", "torch_musa"}
# Stood-in attributes that raise as on a machine without a GPU (code probing for the GPU backend through
# triton catches the error and falls back to the CPU, as it would here without the stand-in).
STUB_RAISES = {"triton.runtime.driver.active"}
STUBBED: set[str] = set()
_BASES: dict[str, type] = {}


class _Anything:
    """An inert value: every attribute, call, item and iteration yields something harmless."""

    def __init__(self, name: str = "stub"):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if f"{self._name}.{name}" in STUB_RAISES:
            raise RuntimeError(f"{self._name}.{name}: no GPU here")
        return _Anything(f"{self._name}.{name}")

    def __setattr__(self, name, value):
        pass

    def __call__(self, *args, **kwargs):
        # used as a bare decorator (`@torch.compile`): keep the decorated function
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _Anything):
            return args[0]
        return _Anything(f"{self._name}()")

    def __mro_entries__(self, bases):
        # `class X(torch.nn.Module, ABC)`: a plain class of that name keeps any MRO consistent
        cls = _BASES.get(self._name)
        if cls is None:
            cls = _BASES[self._name] = type(self._name.rsplit(".", 1)[-1], (), {})
        return (cls,)

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __contains__(self, item):
        return False

    def __getitem__(self, key):
        return _Anything(f"{self._name}[]")

    def __int__(self):
        return 0

    __index__ = __int__

    def __float__(self):
        return 0.0

    def __str__(self):
        return ""

    def __repr__(self):
        return f"<stand-in {self._name}>"

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __eq__(self, other):
        return other is self

    def __hash__(self):
        return id(self)

    def __lt__(self, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name == "__version__":
            return STUB_VERSIONS.get(self.__name__.split(".")[0], "0.0.0")
        if name.startswith("__") and name.endswith("__") or name in STUB_ABSENT.get(self.__name__, ()):
            raise AttributeError(name)
        sub = sys.modules.get(f"{self.__name__}.{name}")
        if sub is not None:
            return sub
        if name[:1].isupper():
            # a class name (`triton.runtime.jit.JITFunction`): a real class, so that the code outside the
            # engine that meets it (torch's `isinstance(x, (..., JITFunction))`) gets a type
            return _stub_class(f"{self.__name__}.{name}")
        return _Anything(f"{self.__name__}.{name}")


class _StubMeta(abc.ABCMeta):   # ABCMeta: `class X(nn.Module, ABC)` keeps one metaclass
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything(f"{cls.__qualname__}.{name}")


class _StubClass(metaclass=_StubMeta):
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything(f"{type(self).__qualname__}().{name}")

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        # a pydantic model field typed with a stood-in class (`xgrammar.StructuralTag`) accepts anything
        from pydantic_core import core_schema

        return core_schema.any_schema()


def _stub_class(qualname: str) -> type:
    cls = _BASES.get(qualname)
    if cls is None:
        cls = _BASES[qualname] = _StubMeta(qualname.rsplit(".", 1)[-1], (_StubClass,), {"__qualname__": qualname})
    return cls


def _caller() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__") or ""
        spec = frame.f_globals.get("__spec__")
        if name == "__main__" and spec is not None:
            name = spec.name    # an entry module run as `python3 -m` (runpy): its own name decides
        if not name.startswith(("importlib", "_frozen_importlib")) and name != __name__:
            return name
        frame = frame.f_back
    return ""


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top in OWNERS or top in NEVER_STAND_IN:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            try:
                spec = finder.find_spec(name, path, target)
            except Exception:
                spec = None
            if spec is not None:
                return None
        if top not in STUBBED and _caller().split(".")[0] not in OWNERS:
            return None          # a library's optional import: let it fail as it would
        STUBBED.add(top)
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        module.__file__ = "<stand-in>"

    def find_distributions(self, context=importlib.metadata.DistributionFinder.Context()):
        # `importlib.metadata.version(x)` of a stood-in package (transformers asks for torchcodec's once
        # it finds the module): the stand-in's version, as its `__version__` says
        name = (context.name or "").replace("-", "_").lower()
        return [_StubDistribution(name)] if name in STUBBED else []


class _StubDistribution(importlib.metadata.Distribution):
    def __init__(self, name: str):
        self._name = name

    def read_text(self, filename):
        if filename == "METADATA":
            return f"Metadata-Version: 2.1\nName: {self._name}\nVersion: {STUB_VERSIONS.get(self._name, '0.0.0')}\n"
        return None

    def locate_file(self, path):
        return path


# ---- parsers: each returns (argparse parser, distribution name) -----------------------------------

def _sglang():
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)          # what sglang.launch_server builds (prepare_server_args)
    return parser, "sglang"


def _sglang_router():
    from sglang_router.router_args import RouterArgs

    parser = argparse.ArgumentParser()
    RouterArgs.add_cli_args(parser, use_router_prefix=False)   # sglang_router.launch_router
    return parser, "sglang-router"


def _smg():
    from smg.router_args import RouterArgs

    parser = argparse.ArgumentParser()
    RouterArgs.add_cli_args(parser, use_router_prefix=False)   # `smg launch`
    return parser, "smg"


class _VllmServe(argparse.ArgumentParser):
    """`vllm serve ARGS` as vllm/entrypoints/cli/main.py runs it: the top-level FlexibleArgumentParser with
    the serve subcommand's own parser (`ServeSubcommand.subparser_init`), then the subcommand's
    `validate` (its quick checks before any model is loaded), whose errors exit 2 here."""

    def __init__(self):
        import vllm.platforms
        from vllm.platforms.cpu import CpuPlatform

        # the CPU platform, as on a GPU-less host: VLLM_TARGET_DEVICE alone leaves 0.27's custom-op
        # registration asking a stood-in device for its dispatch key (Dynamo's frontend does the same)
        vllm.platforms.current_platform = CpuPlatform()
        from vllm.entrypoints.cli.serve import ServeSubcommand
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        super().__init__(add_help=False)
        self.top = FlexibleArgumentParser(prog="vllm")
        self.cmd = ServeSubcommand()
        serve = self.cmd.subparser_init(self.top.add_subparsers(required=False, dest="subparser"))
        self._actions = serve._actions
        self._option_string_actions = serve._option_string_actions
        self.allow_abbrev = serve.allow_abbrev     # the serve parser's, which decides

    def parse_args(self, args=None, namespace=None):
        parsed = self.top.parse_args(["serve", *args])
        try:
            self.cmd.validate(parsed)
        except (TypeError, ValueError) as exc:
            sys.stderr.write(f"vllm serve: error: {exc}\n")
            raise SystemExit(2) from None
        return parsed


def _vllm():
    return _VllmServe(), "vllm"


def _vllm_router():
    from vllm_router.router_args import RouterArgs

    parser = argparse.ArgumentParser()
    RouterArgs.add_cli_args(parser, use_router_prefix=False)   # vllm_router.launch_router.parse_router_args
    return parser, "vllm-router"


ENTRY_FILES: list[str] = []
SOURCE_VERSION: list[str] = []      # set by a host whose engine's source states its version


class _Captured(Exception):
    """Raised in place of an entry point's first parse_args: its parser is built, nothing else is done."""


def _entry_parser(module: str) -> argparse.ArgumentParser:
    """The parser `python3 -m MODULE` builds, exactly as its `__main__` builds it (run here, stopped at its
    first `parse_args`, before it loads a tokenizer or touches a GPU)."""
    import importlib.util
    import runpy

    ENTRY_FILES.append(importlib.util.find_spec(module).origin)   # run as __main__, so not in sys.modules
    seen: list[argparse.ArgumentParser] = []
    original = argparse.ArgumentParser.parse_args

    def capture(self, args=None, namespace=None):
        seen.append(self)
        raise _Captured

    argparse.ArgumentParser.parse_args = capture
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except _Captured:
        pass
    finally:
        argparse.ArgumentParser.parse_args = original
    if not seen:
        raise RuntimeError(f"python3 -m {module} returned without building an argument parser")
    return seen[0]


def _atom():
    # ATOM has no wheel: its source at a pinned commit is on PYTHONPATH (tests/engines/sources.json)
    return _entry_parser("atom.entrypoints.openai_server"), None


PARSERS = {"sglang": _sglang, "sglang-router": _sglang_router, "smg": _smg, "vllm": _vllm,
           "vllm-router": _vllm_router, "atom": _atom}


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> dict:
    err = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            return {"ok": exc.code in (0, None), "error": err.getvalue().strip().splitlines()[-1:] and
                    err.getvalue().strip().splitlines()[-1] or f"exit {exc.code}", "deprecated": []}
        except Exception as exc:     # a launcher's own checks after argparse (Dynamo's config.validate)
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "deprecated": []}
    notes = [str(w.message) for w in caught if "deprecat" in str(w.message).lower()]
    notes += [line for line in err.getvalue().splitlines() if "deprecat" in line.lower()]
    return {"ok": True, "error": "", "deprecated": notes}


def _kind(action: argparse.Action) -> str | None:
    """"int" or "float" for an option that takes one number, as the parser converts it; None otherwise
    (flags, lists, strings, choices, or a conversion of the engine's own: those are its to judge)."""
    if action.nargs not in (None, "?") or action.choices:
        return None
    convert = action.type
    return {int: "int", float: "float"}.get(convert)


def _kinds(parser: argparse.ArgumentParser) -> dict[str, str]:
    """'--name' -> the kind of number it takes, for every option `_kind` knows."""
    return {o: kind for a in parser._actions if (kind := _kind(a)) for o in a.option_strings if o.startswith("--")}


def _owner_files() -> list[str]:
    """The engine's own source files the parser was built from, relative to their PYTHONPATH entry (what a
    pinned source release must hold, tests/engines/sources.py)."""
    import os

    roots = [os.path.abspath(p) for p in sys.path if p]
    found = set()
    paths = [getattr(m, "__file__", None) for n, m in list(sys.modules.items()) if n.split(".")[0] in OWNERS]
    for path in paths + ENTRY_FILES:
        if not path or not os.path.isfile(path):
            continue
        path = os.path.abspath(path)
        root = max((r for r in roots if path.startswith(r + os.sep)), key=len, default=None)
        if root is not None:
            found.add(os.path.relpath(path, root))
    return sorted(found)


def main() -> int:
    sys.meta_path.append(_StandIns())
    name = sys.argv[1]
    sys.argv = ["parser_host"]
    out = sys.stdout
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            parser, dist = PARSERS[name]()
        except BaseException:
            import traceback

            sys.__stderr__.write(err.getvalue() + traceback.format_exc())
            return 1
    # the parser's registry, not each action's option_strings: vLLM's EnableDisableAction keeps accepting
    # `--no-enable-x` while showing only `--disable-x` in its help
    options = sorted(set(getattr(parser, "_option_string_actions", {})) |
                     {o for a in parser._actions for o in a.option_strings})
    # a parser built from pinned source files has no distribution to ask: the version its own source states
    # where it has one (TensorRT-LLM's version.py), else None (the folder's, checked by its pinned hashes)
    version = importlib.metadata.version(dist) if dist else (SOURCE_VERSION[0] if SOURCE_VERSION else None)
    out.write(json.dumps({"version": version, "options": options, "kinds": _kinds(parser),
                          "abbrev": bool(getattr(parser, "allow_abbrev", True)),
                          "stood-in": sorted(STUBBED), "files": _owner_files(),
                          **getattr(parser, "info", {})}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if hasattr(parser, "files"):        # the files the commands name (TensorRT-LLM's options file)
            parser.files = request.get("files") or {}
        out.write(json.dumps({"results": [_parse(parser, list(a)) for a in request["argvs"]]}) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
