"""What `runner run`, `runner profile` and `runner acceptance` read, read once (shell): the row, its
recipe (the row's `recipe`, or its master entry's), the runner's `hardware:` facts, the policy's `evals:`
for eval rows, the trusted image policy, free ports for port 0, the GPUs the runner was given. The one
`RunInputs` value goes to `run_plan.plan_job`, which plans from it alone.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from ci_tools import names
from ci_tools.config.load import default_master_paths, load_image_policy, load_recipe, read_masters, read_runners
from ci_tools.config.recipe import Recipe
from ci_tools.errors import InputError, UsageError
from ci_tools.evals.policy import EvalPolicy, is_eval_row, policy_from_doc
from ci_tools.runner.plan import CONTAINER_BACKENDS
from ci_tools.runner.run_plan import AcceptanceCell, ImagePolicy, RunInputs, RunRequest
from ci_tools.sweep.row import MatrixRow, MultiNodeRow, SingleNodeRow, parse_row
from ci_tools.yaml.load import load_yaml_file, read_text

# what a SPEED-Bench collection cell (a row of `config acceptance-matrix`) holds besides its `serve` row
CELL_KEYS = ("id", "model", "engine", "mtp", "thinking")


def read_run(req: RunRequest, profile: tuple[int | None] | None = None) -> RunInputs:
    """`runner run`'s inputs (`runner profile`'s with PROFILE: single-node rows only)."""
    row = load_row(req.row_path)
    if profile is not None and isinstance(row, MultiNodeRow):
        raise UsageError("`runner profile` serves single-node rows only; a prefill/decode row's workers would "
                         "each need their own profile calls (not supported yet)")
    recipe_file = recipe_path(row, req.root, req.row_path)
    try:
        display = str(recipe_file.resolve().relative_to(req.root.resolve()))
    except ValueError:
        display = str(recipe_file)
    recipe = load_recipe(recipe_file, display, req.root)    # never a file from outside the repository
    return _inputs(req, row, recipe, profile=profile)


def read_acceptance(req: RunRequest, dataset_file: str | None, run_url: str | None) -> RunInputs:
    """`runner acceptance`'s inputs: the collection cell, its `serve` row and that row's recipe."""
    cell = load_json_row(req.row_path)
    serve = cell.get("serve")
    missing = [k for k in CELL_KEYS if k not in cell]
    if not isinstance(serve, dict) or missing:
        raise InputError(f"{req.row_path}: not a SPEED-Bench collection cell (no "
                         f"{', '.join(missing) if missing else '`serve` row'}); pass a row of "
                         "`ci-tools config acceptance-matrix --format json`")
    row = parse_row(serve, f"{req.row_path}: serve")
    if isinstance(row, MultiNodeRow):
        raise UsageError("`runner acceptance` measures single-node points only")
    recipe_file = recipe_path(row, req.root, req.row_path)
    recipe = load_recipe(recipe_file, str(recipe_file), req.root)
    return _inputs(req, row, recipe, acceptance=AcceptanceCell(cell, dataset_file, run_url))


def _inputs(req: RunRequest, row: SingleNodeRow | MultiNodeRow, recipe: Recipe, **mode: Any) -> RunInputs:
    """The rest of what the job is planned from, once the row and its recipe are read."""
    images = image_policy(req.image_policy) if req.backend in CONTAINER_BACKENDS else None
    hardware = hardware_of(row, req.root)
    port, worker_port = req.port, req.worker_port
    if 0 in (port, worker_port):
        port, worker_port = free_ports(req.backend, port, worker_port)
    return RunInputs(request=req, row=row, recipe=recipe, hardware=hardware, root=str(req.root.resolve()),
                     out=req.out if req.dry_run else req.out.resolve(), port=port, worker_port=worker_port,
                     gpus=req.gpus if req.gpus is not None else os.environ.get("CUDA_VISIBLE_DEVICES"),
                     evals=eval_policy(row, req.root), images=images, **mode)


def load_json_row(path: Path) -> dict:
    """The one JSON object of a row file (or of a one-element list, as a matrix output holds it)."""
    try:
        row = json.loads(read_text(path))
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(row, list) and len(row) == 1:
        row = row[0]
    if not isinstance(row, dict):
        raise InputError(f"{path}: expected one matrix row (a JSON object)")
    return row


def load_row(path: Path) -> SingleNodeRow | MultiNodeRow:
    """The matrix row of a `--row` file, read and checked once."""
    return parse_row(load_json_row(path), str(path))


def recipe_path(row: MatrixRow, root: Path, row_path: Path) -> Path:
    if row.get("recipe"):
        return root / str(row["recipe"])
    key = row.get("config-key")
    if not key:
        raise InputError(f"{row_path}: the row has neither `recipe` nor `config-key`, so its recipe cannot be "
                         "found; pass a row printed by `ci-tools plan` or `ci-tools matrix`")
    masters = read_masters(default_master_paths(root), root)
    entry = masters.entries.get(key)
    if entry is None:
        raise InputError(f"{row_path}: config key {key!r} is not in any master config under {root}")
    if not isinstance(entry, dict) or not entry.get("recipe"):
        raise InputError(f"master entry {key!r} has no `recipe:` field; `runner run` serves recipe entries only")
    return root / str(entry["recipe"])


def hardware_of(row: MatrixRow, root: Path) -> dict:
    """runners.yaml `hardware:` facts of the row's runner label ({} when none)."""
    path = root / names.RUNNERS
    if not path.is_file() or not row.get("runner"):
        return {}
    hw = (read_runners(path, root).data or {}).get("hardware") or {}
    return hw.get(row["runner"]) or {}


def free_ports(backend: str, port: int, worker_port: int) -> tuple[int, int]:
    """Port 0: one the kernel says is free now (another job on a shared host holds its own)."""
    if backend == "slurm":
        raise UsageError("--port 0 / --worker-port 0 pick free ports on this host, but with slurm the engine runs "
                         "on a compute node; give the ports explicitly (or hold the node with exclusive: true)")
    socks = []
    try:
        picked = []
        for value in (port, worker_port):
            if value:
                picked.append(value)
                continue
            s = socket.socket()
            s.bind(("0.0.0.0", 0))
            socks.append(s)
            picked.append(s.getsockname()[1])
        return picked[0], picked[1]
    finally:
        for s in socks:
            s.close()


def eval_policy(row: MatrixRow, root: Path) -> EvalPolicy | None:
    """The policy's `evals:` section, for eval rows only (other rows run without a policy file)."""
    if not is_eval_row(row):
        return None
    path = root / names.POLICY
    if not path.is_file():
        raise InputError(f"{path}: policy file not found; eval rows take their harness and tasks from its "
                         "`evals:` section (pass --root REPO)")
    return policy_from_doc(load_yaml_file(path, names.POLICY))


def image_policy(path: Path | None) -> ImagePolicy | None:
    """The trusted policy's image allowlist (None without --image-policy); a policy that cannot be read, or
    names no allowlist, refuses the job before anything starts."""
    if path is None:
        return None
    try:
        patterns, shown = load_image_policy(path)
    except InputError as exc:
        raise InputError(f"not started: {exc.message}", exit_code=exc.exit_code) from None
    return ImagePolicy(tuple(patterns), shown)
