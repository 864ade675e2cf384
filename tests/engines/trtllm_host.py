"""`trtllm-serve serve` as TensorRT-LLM's own code runs it, from its source files at a pinned commit (no wheel
of TensorRT-LLM can be had: PyPI carries placeholders only, docs/engines.md).

Run like parser_host.py (`python trtllm_host.py trtllm`, same stdin/stdout protocol) in the engines venv,
with PYTHONPATH holding the pinned source release (tests/engines/sources.json). Of the `tensorrt_llm`
package, the modules whose files the release pins are TensorRT-LLM's own code, imported as they are: the
click command of `tensorrt_llm/commands/serve.py`, its option choices (log levels, reasoning and tool
parsers), and the LLM-API option model `tensorrt_llm/llmapi/llm_args.py` with the functions serve.py merges
the options file through. Every other module of the package (the C++ bindings, the engine, the executor)
is stood in, as parser_host.py stands in torch.

Each command line is run through the real command (`trtllm-serve serve ARGS`) up to `launch_server`: click
parses it (unknown option, wrong type, choice: exit 2 as on the server), serve's callback builds its LLM
arguments and merges the `--extra_llm_api_options` file into them with `update_llm_args_with_extra_dict`
(a misspelt key of a nested config is refused there), and the merged arguments are validated by the
backend's argument model (`TorchLlmArgs.from_kwargs` for the PyTorch backend: an unknown top-level key is
refused, StrictBaseModel). A request may carry the files its commands name: {"argvs": [...], "files":
{path: text}}; they are written to a temporary folder and the paths in the command line pointed there.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import parser_host  # noqa: E402

PACKAGE = "tensorrt_llm"


class _PinnedOrStandIn(importlib.machinery.PathFinder):
    """A `tensorrt_llm` module is TensorRT-LLM's own file where the pinned release has it, else a stand-in (a
    package, so that a pinned module below it is still found)."""

    def __init__(self, root: str):
        self.root = root

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] != PACKAGE:
            return None
        base = os.path.join(self.root, *name.split("."))
        for file, package in ((base + ".py", False), (os.path.join(base, "__init__.py"), True)):
            if os.path.isfile(file):
                return importlib.util.spec_from_file_location(name, file,
                                                              submodule_search_locations=[base] if package else None)
        parser_host.STUBBED.add(name)
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        module = parser_host._StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        module.__file__ = "<stand-in>"


class _Launched(Exception):
    """Raised in place of launch_server: serve's callback got that far with these LLM arguments."""


class _Click(argparse.Action):
    """A click option seen as argparse would have it, for parser_host's option and kind reports."""

    def __init__(self, option, kind):
        super().__init__(option.opts + option.secondary_opts, option.name, type=kind, nargs=None)


class Serve:
    """`trtllm-serve serve` (the group's `serve` command), its callback stopped at launch_server."""

    allow_abbrev = False          # click takes no unique prefix of an option

    def __init__(self):
        import importlib

        import click

        # by name: `from tensorrt_llm.commands import serve` would take the stood-in package's attribute
        serve = importlib.import_module("tensorrt_llm.commands.serve")
        self.serve = serve
        self.main = serve.main
        command = self.main.commands["serve"]
        kinds = {click.INT: int, click.FLOAT: float}
        self._actions = [_Click(p, kinds.get(p.type) if not p.multiple and not p.is_flag else None)
                         for p in command.params if isinstance(p, click.Option)]
        self._option_string_actions = {o: a for a in self._actions for o in a.option_strings}
        self.files: dict[str, str] = {}
        # what the options file may hold: the PyTorch backend's argument model, and speculative_config by the
        # decoding_type that selects its model (reported to tests/engines/arg_kinds.py)
        model = importlib.import_module("tensorrt_llm.llmapi.llm_args")
        fields = _fields(model.TorchLlmArgs)
        fields["speculative_config"] = {"decoding_type": _decoding_types(model)}
        self.info = {"options-file": fields}

    def parse_args(self, argv):
        import importlib

        import click

        argv = list(argv)
        with tempfile.TemporaryDirectory() as tmp:
            for i, (path, text) in enumerate(self.files.items()):
                local = os.path.join(tmp, f"{i}-{os.path.basename(path)}")
                Path(local).write_text(text)
                argv = [local if a == path else a for a in argv]
            got = {}

            def launch(host, port, llm_args, *rest, **kw):
                got["llm_args"] = llm_args
                raise _Launched

            self.serve.launch_server = launch
            try:
                self.main.main(["serve", *argv], prog_name="trtllm-serve", standalone_mode=False)
            except click.UsageError as exc:
                sys.stderr.write(f"trtllm-serve serve: error: {exc.format_message()}\n")
                raise SystemExit(2) from None
            except _Launched:
                pass
        if "llm_args" not in got:
            raise RuntimeError("trtllm-serve serve returned without launching the server")
        llm_args = dict(got["llm_args"])
        backend = llm_args.get("backend")
        model = importlib.import_module("tensorrt_llm.llmapi.llm_args")

        if backend == "pytorch":
            llm_args.pop("build_config", None)       # as launch_server does for the PyTorch backend
            model.TorchLlmArgs.from_kwargs(**llm_args)
        elif backend in ("tensorrt", "trt"):
            llm_args.pop("backend")
            model.TrtLlmArgs.from_kwargs(**llm_args)


def _fields(cls, seen: frozenset = frozenset()) -> dict:
    """A pydantic model's fields as the options file may write them: name -> the same for a field that holds one
    model (kv_cache_config), else None."""
    import pydantic

    out = {}
    for name, field in cls.model_fields.items():
        models = [m for m in _models(field.annotation) if issubclass(m, pydantic.BaseModel) and m not in seen]
        out[name] = _fields(models[0], seen | {cls}) if len(models) == 1 else None
    return out


def _models(annotation) -> list:
    import typing

    if isinstance(annotation, type):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def _decoding_types(model) -> dict:
    """decoding_type -> the config it selects, as `DecodingBaseConfig.from_dict` dispatches (its own mapping,
    read from its source: a dict of `"Name": ConfigClass`); for the PyTorch backend `Eagle` is Eagle3's."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(model.DecodingBaseConfig.from_dict)))
    mapping = next(n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                   and any(getattr(t, "id", "") == "config_classes" for t in n.targets))
    out = {k.value: _fields(getattr(model, v.id)) for k, v in zip(mapping.keys, mapping.values)}
    if "Eagle" in out and hasattr(model, "Eagle3DecodingConfig"):
        out["Eagle"] = _fields(model.Eagle3DecodingConfig)
    return out


def _trtllm():
    # the stand-in of a pybind enum or class has no members: llm_args checks its mirrors against them
    meta = parser_host._StubMeta.__getattr__

    def members(cls, name):
        return {} if name == "__members__" else meta(cls, name)

    parser_host._StubMeta.__getattr__ = members
    root = next(p for p in sys.path if os.path.isdir(os.path.join(p, PACKAGE)))
    sys.meta_path.insert(0, _PinnedOrStandIn(root))
    import importlib

    VERSION.append(importlib.import_module("tensorrt_llm.version").__version__)   # the release it says it is
    return Serve(), None


VERSION: list[str] = []


parser_host.PARSERS["trtllm"] = _trtllm
parser_host.SOURCE_VERSION = VERSION

if __name__ == "__main__":
    sys.exit(parser_host.main())
