"""One matrix row, typed: a single-node or a multi-node benchmark job as InferenceX's generator emits it.

A row is read through typed attributes (`row.tp`, `row.prefill.num_worker`, `row.is_agentic`) and never
changed: `replace` and `without` return a new row. What it holds is the row's JSON object exactly as it
is written back, because InferenceX's key order is the order its generator assigns keys in (fixed keys,
then optional ones, then what eval marking adds), which `matrix.py` reproduces step by step; a new row
from `replace` keeps every existing key in its place and appends the new ones, as the generator's own
assignments do. So `as_dict()` is InferenceX's row byte for byte, and the plan's keys (config-key,
recipe-fingerprint, priority, ...) follow it in the order the plan adds them.

Rows from outside (a `runner run --row` file) are checked once by `parse_row`: the kind of every known
key (numbers, flags, the two worker groups, the concurrency: one integer on a single-node row, a list
on a multi-node one), with a message naming the key and the file. Keys this module does not know are
kept and written back as they came.

Until the runner is rebuilt around one job spec, a row is also a read-only `Mapping` of its JSON keys,
so `runner/` reads it unchanged; new code reads the attributes.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, TypeVar

from ci_tools.errors import InputError

FIXED = "fixed-seq-len"
AGENTIC = "agentic-coding"

# attribute name -> the row's JSON key, for every key with an attribute (InferenceX's, then ci-tools')
KEYS: dict[str, str] = {
    "image": "image", "model": "model", "model_prefix": "model-prefix", "precision": "precision",
    "framework": "framework", "runner": "runner", "isl": "isl", "osl": "osl", "tp": "tp", "pp": "pp",
    "dcp_size": "dcp-size", "pcp_size": "pcp-size", "conc": "conc", "max_model_len": "max-model-len", "ep": "ep",
    "dp_attn": "dp-attn", "spec_decoding": "spec-decoding", "prefill": "prefill", "decode": "decode",
    "kv_offloading": "kv-offloading", "total_cpu_dram_gb": "total-cpu-dram-gb", "duration": "duration",
    "exp_name": "exp-name", "disagg": "disagg", "scenario_type": "scenario-type",
    "kv_offload_backend": "kv-offload-backend", "router": "router", "kv_p2p_transfer": "kv-p2p-transfer",
    "run_eval": "run-eval", "eval_conc": "eval-conc", "eval_all_concs": "eval-all-concs", "eval_only": "eval-only",
    # ci-tools' own: what the plan adds, and what `runner run` reads besides InferenceX's keys
    "agentx_fast": "agentx-fast", "recipe_fingerprint": "recipe-fingerprint", "canary": "canary",
    "config_key": "config-key", "family": "family", "bucket": "bucket", "priority": "priority",
    "queue_token": "queue-token", "skip_queue_pr": "skip-queue-pr", "recipe": "recipe",
}

_INTS = ("isl", "osl", "tp", "pp", "dcp-size", "pcp-size", "max-model-len", "ep", "total-cpu-dram-gb", "eval-conc")
_FLAGS = ("dp-attn", "disagg", "run-eval", "eval-all-concs", "eval-only", "agentx-fast")
_TEXTS = ("image", "model", "model-prefix", "precision", "framework", "runner", "spec-decoding", "exp-name",
          "scenario-type", "kv-p2p-transfer", "config-key", "recipe", "canary", "family", "bucket", "priority",
          "queue-token")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")

R = TypeVar("R", bound="MatrixRow")


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    return bool(value)


def _count(value: Any) -> int:
    """A worker count or size as the block gives it, 1 where it gives none (InferenceX's default)."""
    return 1 if value is None else value


class Worker:
    """One worker group of a multi-node row (its prefill or decode side)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    @property
    def num_worker(self) -> int:
        return _count(self._data.get("num-worker"))

    @property
    def tp(self) -> int:
        return _count(self._data.get("tp"))

    @property
    def ep(self) -> int:
        return _count(self._data.get("ep"))

    @property
    def dp_attn(self) -> bool:
        return bool(self._data.get("dp-attn", False))

    @property
    def pp(self) -> int:
        return _count(self._data.get("pp"))

    @property
    def dcp_size(self) -> int:
        return _count(self._data.get("dcp-size"))

    @property
    def pcp_size(self) -> int:
        return _count(self._data.get("pcp-size"))

    @property
    def hardware(self) -> str | None:
        return self._data.get("hardware")

    @property
    def gpus(self) -> int:
        """GPUs of the whole group: tp*pp*pcp-size per worker (DCP reuses the TP GPUs)."""
        return self.num_worker * self.tp * self.pp * self.pcp_size

    def as_dict(self) -> dict[str, Any]:
        return dict(self._data)


class MatrixRow(Mapping[str, Any]):
    """What both kinds of row have. Build one with `make_row` (trusted data, e.g. the matrix expansion)
    or `parse_row` (a file's)."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data        # never changed after this: every change makes a new row

    # -- the read-only mapping of the row's JSON keys ---------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    # the dict's own views: Mapping's generic ones read every key back through __getitem__
    def keys(self) -> KeysView[str]:
        return self._data.keys()

    def items(self) -> ItemsView[str, Any]:
        return self._data.items()

    def values(self) -> ValuesView[Any]:
        return self._data.values()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MatrixRow):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]   # rows hold lists and dicts

    # -- writing back and deriving ----------------------------------------------------------------------
    def as_dict(self) -> dict[str, Any]:
        """The row's JSON object, keys in InferenceX's order (a copy)."""
        return dict(self._data)

    def replace(self: R, **changes: Any) -> R:
        """A new row with these attributes set: an existing key keeps its place, a new one is appended.
        The row itself when it already holds every one of them (rows are never changed, so it is shared)."""
        old, new = self._data, None
        for attr, value in changes.items():
            key = KEYS[attr]
            if new is None and key in old and type(old[key]) is type(value) and old[key] == value:
                continue       # eval marking leaves most rows as they were: no copy for them
            if new is None:
                new = dict(old)
            new[key] = value
        return self if new is None else type(self)(new)

    def without(self: R, *attrs: str) -> R:
        data = dict(self._data)
        for attr in attrs:
            data.pop(KEYS[attr], None)
        return type(self)(data)

    def with_keys(self: R, extra: Mapping[str, Any]) -> R:
        """A new row with JSON keys added or set (keys this module has no attribute for, from a caller)."""
        return type(self)({**self._data, **extra})

    # -- what every row has -----------------------------------------------------------------------------
    @property
    def is_multinode(self) -> bool:
        return False

    @property
    def image(self) -> str:
        return self._data["image"]

    @property
    def model(self) -> str:
        return self._data["model"]

    @property
    def model_prefix(self) -> str | None:
        return self._data.get("model-prefix")

    @property
    def precision(self) -> str | None:
        return self._data.get("precision")

    @property
    def framework(self) -> str | None:
        return self._data.get("framework")

    @property
    def runner(self) -> str | None:
        return self._data.get("runner")

    @property
    def scenario_type(self) -> str:
        """agentic-coding, or fixed-seq-len (InferenceX's fixed-sequence rows carry no scenario-type)."""
        return self._data.get("scenario-type") or FIXED

    @property
    def is_agentic(self) -> bool:
        return self._data.get("scenario-type") == AGENTIC

    @property
    def isl(self) -> int | None:
        return self._data.get("isl")

    @property
    def osl(self) -> int | None:
        return self._data.get("osl")

    @property
    def max_model_len(self) -> int | None:
        return self._data.get("max-model-len")

    @property
    def spec_decoding(self) -> str | None:
        return self._data.get("spec-decoding")

    @property
    def exp_name(self) -> str | None:
        return self._data.get("exp-name")

    @property
    def disagg(self) -> bool:
        return bool(self._data.get("disagg", False))

    @property
    def router(self) -> Mapping[str, Any] | None:
        return self._data.get("router")

    @property
    def kv_p2p_transfer(self) -> str | None:
        return self._data.get("kv-p2p-transfer")

    @property
    def kv_offloading(self) -> str | None:
        """none, dram, ...: None where the row does not say (fixed-sequence rows, agentic rows without it)."""
        return self._data.get("kv-offloading")

    @property
    def kv_offload_backend(self) -> Mapping[str, Any] | None:
        return self._data.get("kv-offload-backend")

    @property
    def total_cpu_dram_gb(self) -> int:
        return int(self._data.get("total-cpu-dram-gb") or 0)

    @property
    def duration(self) -> int | float | None:
        return self._data.get("duration")

    @property
    def run_eval(self) -> bool:
        return _truthy(self._data.get("run-eval"))

    @property
    def eval_only(self) -> bool:
        return _truthy(self._data.get("eval-only"))

    @property
    def eval_conc(self) -> int | None:
        """The concurrency eval marking picked for this row's eval (InferenceX picks one per multi-node row)."""
        return self._data.get("eval-conc")

    @property
    def is_eval(self) -> bool:
        """An eval row: marked for evals, or an eval-only row."""
        return self.run_eval or self.eval_only

    @property
    @abstractmethod
    def concs(self) -> tuple[int, ...]:
        """Every concurrency of the row: one on a single-node row, the list of a multi-node one."""

    @property
    @abstractmethod
    def gpus(self) -> int:
        """GPUs the job holds."""

    # -- ci-tools' keys ---------------------------------------------------------------------------------
    @property
    def config_key(self) -> str | None:
        return self._data.get("config-key")

    @property
    def recipe(self) -> str | None:
        return self._data.get("recipe")

    @property
    def agentx_fast(self) -> bool:
        return _truthy(self._data.get("agentx-fast"))

    @property
    def recipe_fingerprint(self) -> str | None:
        return self._data.get("recipe-fingerprint")

    @property
    def canary(self) -> str | None:
        return self._data.get("canary")

    @property
    def family(self) -> str | None:
        return self._data.get("family")

    @property
    def bucket(self) -> str | None:
        return self._data.get("bucket")

    @property
    def priority(self) -> str | None:
        return self._data.get("priority")

    @property
    def queue_token(self) -> str | None:
        return self._data.get("queue-token")


class SingleNodeRow(MatrixRow):
    """One engine (its tp/ep/dp-attn/pp/dcp/pcp) at one concurrency."""

    __slots__ = ()

    @property
    def tp(self) -> int:
        return self._data["tp"]

    @property
    def ep(self) -> int:
        ep = self._data.get("ep")
        return 1 if ep is None else ep

    @property
    def dp_attn(self) -> bool:
        return bool(self._data.get("dp-attn", False))

    @property
    def pp(self) -> int:
        return self._data.get("pp", 1)

    @property
    def dcp_size(self) -> int:
        return self._data.get("dcp-size", 1)

    @property
    def pcp_size(self) -> int:
        return self._data.get("pcp-size", 1)

    @property
    def conc(self) -> int:
        return self._data["conc"]

    @property
    def concs(self) -> tuple[int, ...]:
        return (self._data["conc"],)

    @property
    def gpus(self) -> int:
        """tp*pp*pcp-size (DCP reuses the TP GPUs)."""
        return self._data.get("tp", 1) * self._data.get("pp", 1) * self._data.get("pcp-size", 1)


class MultiNodeRow(MatrixRow):
    """Prefill and decode worker groups (disaggregated), every listed concurrency in one job."""

    __slots__ = ()

    @property
    def is_multinode(self) -> bool:
        return True

    @property
    def prefill(self) -> Worker:
        return Worker(self._data.get("prefill") or {})

    @property
    def decode(self) -> Worker:
        return Worker(self._data.get("decode") or {})

    @property
    def conc(self) -> tuple[int, ...]:
        return tuple(self._data["conc"])

    @property
    def concs(self) -> tuple[int, ...]:
        return tuple(self._data["conc"])

    @property
    def eval_all_concs(self) -> bool:
        return bool(self._data.get("eval-all-concs", False))

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus


def make_row(data: dict[str, Any]) -> SingleNodeRow | MultiNodeRow:
    """The row of data already in a row's shape (the matrix expansion's own, or parsed); the row owns it."""
    if data.get("prefill") is not None or data.get("decode") is not None:
        return MultiNodeRow(data)
    return SingleNodeRow(data)


def _kind(value: Any) -> str:
    return {bool: "a flag", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def _int_problem(key: str, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"`{key}` must be an integer, not {_kind(value)} ({value!r})"
    return None


def _problems(data: Mapping[str, Any], multinode: bool) -> list[str]:
    problems = []
    for key in _INTS:
        if data.get(key) is not None and (p := _int_problem(key, data[key])):
            problems.append(p)
    for key in _FLAGS:
        value = data.get(key)
        if value is not None and not isinstance(value, bool) and not (
                isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE):
            problems.append(f"`{key}` must be true or false, not {_kind(value)} ({value!r})")
    for key in _TEXTS:
        if data.get(key) is not None and not isinstance(data[key], str):
            problems.append(f"`{key}` must be a string, not {_kind(data[key])} ({data[key]!r})")
    duration = data.get("duration")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float))):
        problems.append(f"`duration` must be a number of seconds, not {_kind(duration)} ({duration!r})")
    for key in ("router", "kv-offload-backend"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            problems.append(f"`{key}` must be an object, not {_kind(data[key])} ({data[key]!r})")
    if "kv-offloading" in data and data["kv-offloading"] is not None and not isinstance(data["kv-offloading"], str):
        problems.append(f"`kv-offloading` must be a string, not {_kind(data['kv-offloading'])}")
    conc = data.get("conc")
    if multinode:
        for role in ("prefill", "decode"):
            w = data.get(role)
            if not isinstance(w, dict):
                problems.append(f"`{role}` must be an object (the worker group), not {_kind(w)}")
                continue
            for key in ("num-worker", "tp", "ep", "pp", "dcp-size", "pcp-size"):
                if w.get(key) is not None and (p := _int_problem(f"{role}.{key}", w[key])):
                    problems.append(p)
            if w.get("dp-attn") is not None and not isinstance(w["dp-attn"], bool):
                problems.append(f"`{role}.dp-attn` must be true or false, not {_kind(w['dp-attn'])}")
        if conc is not None and not (isinstance(conc, list) and all(
                isinstance(c, int) and not isinstance(c, bool) for c in conc)):
            problems.append(f"`conc` of a multi-node row must be a list of integers, not {conc!r}")
    elif isinstance(conc, list):
        problems.append("`conc` must be one integer per job (multi-node rows carry lists)")
    elif conc is not None and (p := _int_problem("conc", conc)):
        problems.append(p)
    return problems


def parse_row(data: Any, where: str) -> SingleNodeRow | MultiNodeRow:
    """A row from a file (`where` names it): every known key of the right kind, flags written as text
    ("true") read as flags. Missing keys are the reader's to judge (what a job needs depends on it)."""
    if not isinstance(data, Mapping):
        raise InputError(f"{where}: expected one matrix row (a JSON object), not {_kind(data)}")
    multinode = data.get("prefill") is not None or data.get("decode") is not None
    problems = _problems(data, multinode)
    if problems:
        raise InputError(f"{where}: not a matrix row ci-tools can read: " + "; ".join(problems))
    row = dict(data)
    for key in _FLAGS:
        if isinstance(row.get(key), str):
            row[key] = row[key].strip().lower() in _TRUE
    return make_row(row)


def as_row(row: Mapping[str, Any], where: str = "the row") -> SingleNodeRow | MultiNodeRow:
    """`row` itself when it is typed, else its JSON object parsed (`parse_row`): what the runner's entry
    points take until every caller holds typed rows."""
    if isinstance(row, (SingleNodeRow, MultiNodeRow)):
        return row
    return parse_row(row, where)


__all__ = ["AGENTIC", "FIXED", "KEYS", "MatrixRow", "MultiNodeRow", "SingleNodeRow", "Worker", "as_row", "make_row",
           "parse_row"]
