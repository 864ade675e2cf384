"""Static contract between the workflow files and the `ci-tools` CLI.

The checks are plain functions over parsed workflow files, so that the tests can run them both on
the real `.github/` tree and on small planted bad examples (each check must be able to fail).

What is checked:
- every `ci-tools ...` line in a `run:` block parses with the real Click CLI (`make_context` on the
  resolved sub-command, `${{ }}` and `$VAR` placeholders replaced by dummy values);
- every `steps.<id>.outputs.<name>` read is written by that step's ci-tools command (the command
  module declares `GITHUB_OUTPUTS = {"<sub command path>": (names...)}`) or by a local action;
- every `needs.<job>.outputs.<name>` read names a job in `needs:` that declares that output (for a
  job calling a reusable workflow: an output of that workflow's `workflow_call`);
- every third-party action is pinned by a 40-hex commit SHA with its version in a comment;
- no `${{ }}` expression inside `run:` (values reach the shell through `env:`).
"""

from __future__ import annotations

import copy
import importlib
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import click
import yaml

EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)
STEP_OUTPUT = re.compile(r"\bsteps\.([A-Za-z_][\w-]*)\.outputs\.([A-Za-z_][\w-]*)")
NEEDS_OUTPUT = re.compile(r"\bneeds\.([A-Za-z_][\w-]*)\.outputs\.([A-Za-z_][\w-]*)")
# `needs.plan.outputs[format('matrix-{0}', matrix.bucket)]`: a family of outputs sharing a prefix.
NEEDS_OUTPUT_FAMILY = re.compile(r"\bneeds\.([A-Za-z_][\w-]*)\.outputs\[\s*format\(\s*'([\w-]*)\{0\}'")
SHELL_VAR = re.compile(r"\$\{([A-Za-z_]\w*)(?::-([^}]*))?\}|\$([A-Za-z_]\w*)")
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"#\s*v?\d+(\.\d+)*\b")
LOCAL_PREFIXES = ("$/", "./")


@dataclass
class Problem:
    file: str
    where: str
    message: str
    job: str | None = None
    step: str | None = None

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.message}"


@dataclass
class Invocation:
    """One `ci-tools ...` command line found in a `run:` block."""
    file: str
    job: str
    step: str            # step id, or "#<index>" when the step has no id
    step_id: str | None
    argv: list[str]      # after `ci-tools`, placeholders still in place
    line: int            # line of the `run:` key in the workflow file


@dataclass
class Workflow:
    path: Path
    data: dict
    text: str

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def on(self) -> dict:
        # PyYAML reads the bare key `on` as the boolean True.
        on = self.data.get("on", self.data.get(True))
        if isinstance(on, str):
            return {on: None}
        if isinstance(on, list):
            return {k: None for k in on}
        return on or {}

    @property
    def jobs(self) -> dict:
        return self.data.get("jobs") or {}

    def line_of(self, needle: str, start: int = 0) -> int:
        index = self.text.find(needle, start)
        return self.text.count("\n", 0, index) + 1 if index >= 0 else 0


# text -> its parsed YAML: the workflow tests load the same files hundreds of times per run, and
# PyYAML's parse of all of them costs about half a second each time
_PARSED: dict[str, object] = {}


def parse_workflow(text: str) -> dict:
    """`yaml.safe_load(text)`, parsed once per process; each caller gets its own deep copy, because
    checks and the planted bad examples change what they are given."""
    if text not in _PARSED:
        _PARSED[text] = yaml.safe_load(text)
    return copy.deepcopy(_PARSED[text])


def load_workflows(directory: Path) -> list[Workflow]:
    files = sorted([*directory.glob("*.yml"), *directory.glob("*.yaml")])
    texts = [(f, f.read_text()) for f in files]
    return [Workflow(path=f, data=parse_workflow(text), text=text) for f, text in texts]


# ---------------------------------------------------------------------------------------------
# ci-tools invocations


def _logical_lines(script: str) -> Iterable[str]:
    """Shell lines with backslash continuations joined and comments dropped."""
    buffer = ""
    for raw in script.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        buffer += line
        stripped = buffer.strip()
        buffer = ""
        if stripped and not stripped.startswith("#"):
            yield stripped


def _drop_redirections(words: list[str]) -> list[str]:
    kept, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        if re.fullmatch(r"\d?>>?|<|\d?>&\d?", word):
            skip = not word.endswith(("&1", "&2"))
            continue
        if re.match(r"^\d?>>?\S|^<\S", word):
            continue
        kept.append(word)
    return kept


def ci_tools_commands(script: str) -> list[list[str]]:
    """Every `ci-tools` command in a shell script, split into words (placeholders kept)."""
    found = []
    for line in _logical_lines(script):
        # `${{ ... }}` may contain spaces; keep it as one opaque word for shlex.
        protected = EXPR.sub(lambda m: "__EXPR__", line)
        for segment in re.split(r"\|\||&&|;|\|", protected):
            try:
                words = shlex.split(segment, comments=True)
            except ValueError:
                continue
            while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
                words = words[1:]  # VAR=value prefixes
            words = _drop_redirections(words)
            if words[:1] == ["exec"]:
                words = words[1:]  # `exec ci-tools ...`: the step's signals reach ci-tools itself
            if words and words[0] == "ci-tools":
                found.append(words[1:])
    return found


def invocations(workflows: list[Workflow]) -> list[Invocation]:
    result = []
    for wf in workflows:
        for job_id, job in wf.jobs.items():
            for index, step in enumerate(job.get("steps") or []):
                script = step.get("run")
                if not isinstance(script, str):
                    continue
                job_at = wf.text.find(f"\n  {job_id}:")
                line = wf.line_of(script.strip().splitlines()[0], max(job_at, 0)) if script.strip() else 0
                for argv in ci_tools_commands(script):
                    result.append(Invocation(file=wf.name, job=job_id, step=step.get("id") or f"#{index}",
                                             step_id=step.get("id"), argv=argv, line=line))
    return result


# Dummy values per shell variable: numbers and SHAs where options expect them, existing paths
# for the runner's folders. Anything else becomes a harmless word.
def dummy_env(tmp: Path) -> dict[str, str]:
    event = tmp / "event.json"
    if not event.exists():
        event.write_text("{}")
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    return {
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_WORKSPACE": str(tmp),
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_REPOSITORY": "owner/repo",
        "GITHUB_RUN_ID": "1",
    }


ARRAY_EXPANSION = re.compile(r"^\$\{[A-Za-z_]\w*\[@\]\}$")


def expand_words(argv: list[str], env: dict[str, str]) -> list[str]:
    """Placeholders to dummy values; `"${array[@]}"` (optional arguments built by the script)
    expands to no words at all, its smallest legal value."""
    return [substitute(w, env) for w in argv if not ARRAY_EXPANSION.match(w)]


def substitute(word: str, env: dict[str, str]) -> str:
    word = word.replace("__EXPR__", "1")

    def var(m: re.Match) -> str:
        name = m.group(1) or m.group(3)
        if name in env:
            return env[name]
        if m.group(2) is not None:
            return m.group(2)  # ${NAME:-default}: the default is what the command must accept
        if name.endswith(("_SHA", "_REF")):
            return "0" * 40
        return "1"

    return SHELL_VAR.sub(var, word)


def materialise_paths(args: list[str], tmp: Path) -> None:
    """Create the files and folders a job would have at that point (downloads, earlier steps)."""
    for arg in args:
        if arg.startswith("-"):
            continue
        path = Path(arg) if Path(arg).is_absolute() else tmp / arg
        if not str(path).startswith(str(tmp)):
            continue
        if path.suffix in (".json", ".yaml", ".yml", ".csv", ".txt", ".md"):
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_text("{}")
        elif "/" in arg or path.parent == tmp:
            path.mkdir(parents=True, exist_ok=True)


@dataclass
class Resolved:
    path: tuple[str, ...]          # sub-command path, e.g. ("reuse", "resolve")
    command: click.Command
    params: dict = field(default_factory=dict)


def resolve_command(root: click.Group, argv: list[str], prog: str = "ci-tools") -> Resolved:
    """Parse argv with the real CLI down to the leaf command; raises click errors on bad usage."""
    path: list[str] = []
    command: click.Command = root
    parent = None
    args = list(argv)
    name = prog
    while True:
        ctx = command.make_context(name, args, parent=parent)
        if not isinstance(command, click.Group):
            return Resolved(tuple(path), command, dict(ctx.params))
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            if command.invoke_without_command:
                return Resolved(tuple(path), command)
            raise click.UsageError(f"`{' '.join([prog, *path])}` needs a sub-command", ctx=ctx)
        sub_name, sub, sub_args = command.resolve_command(ctx, rest)
        if sub is None:
            raise click.UsageError(f"no such command {rest[0]!r}", ctx=ctx)
        path.append(sub_name)
        command, parent, args, name = sub, ctx, sub_args, sub_name


def declared_outputs(path: tuple[str, ...], params: dict,
                     commands: dict[str, tuple[str, str]]) -> tuple[str, ...] | None:
    """Output names a command writes to $GITHUB_OUTPUT.

    The registry: the module named in COMMANDS declares `GITHUB_OUTPUTS`, a dict from the
    sub-command path ("reuse resolve") to a tuple of names, or to a function of the parsed
    parameters returning them (when options change what is written).
    """
    if not path or path[0] not in commands:
        return None
    module = importlib.import_module(commands[path[0]][0])
    registry = getattr(module, "GITHUB_OUTPUTS", None)
    if isinstance(registry, dict) and " ".join(path) in registry:
        names = registry[" ".join(path)]
        return tuple(names(params) if callable(names) else names)
    return None


@dataclass
class CliModel:
    """How the checks see the CLI: parse argv -> Resolved, and Resolved -> declared outputs."""
    parse: Callable[[list[str]], Resolved]
    outputs: Callable[[Resolved], tuple[str, ...] | None]


def real_cli(tmp: Path) -> CliModel:
    from ci_tools import cli as cli_module

    def parse(argv: list[str]) -> Resolved:
        env = dummy_env(tmp)
        args = expand_words(argv, env)
        materialise_paths(args, tmp)
        return resolve_command(cli_module.cli, args)

    return CliModel(parse=parse,
                    outputs=lambda r: declared_outputs(r.path, r.params, cli_module.COMMANDS))


# ---------------------------------------------------------------------------------------------
# checks


def check_invocations(workflows: list[Workflow], cli: CliModel) -> tuple[list[Problem], dict]:
    """Each ci-tools line must parse; returns problems and {(file, job, step_id): command path}."""
    problems: list[Problem] = []
    paths: dict[tuple[str, str, str], Resolved | None] = {}
    per_step: dict[tuple[str, str, str], int] = {}
    for inv in invocations(workflows):
        key = (inv.file, inv.job, inv.step)
        per_step[key] = per_step.get(key, 0) + 1
        where = f"line {inv.line}: job {inv.job}, step {inv.step}"
        try:
            resolved = cli.parse(inv.argv)
        except (click.ClickException, ImportError) as exc:
            why = exc.format_message() if isinstance(exc, click.ClickException) else f"{type(exc).__name__}: {exc}"
            problems.append(Problem(inv.file, where, f"`ci-tools {' '.join(inv.argv)}` does not parse: {why}",
                                    job=inv.job, step=inv.step))
            if inv.step_id:
                paths[(inv.file, inv.job, inv.step_id)] = None  # reported once, here
            continue
        if inv.step_id:
            paths[(inv.file, inv.job, inv.step_id)] = resolved
    for (file, job, step), count in per_step.items():
        if count > 1:
            problems.append(Problem(file, f"job {job}, step {step}",
                                    f"{count} ci-tools commands in one step; give each its own step"))
    return problems, paths


def _strings(node) -> Iterable[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str):
                yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _local_action_outputs(uses: str, root: Path) -> tuple[str, ...] | None:
    if not uses.startswith(LOCAL_PREFIXES):
        return None
    for name in ("action.yml", "action.yaml"):
        meta = root / uses.split("/", 1)[1] / name
        if meta.exists():
            return tuple((yaml.safe_load(meta.read_text()).get("outputs") or {}).keys())
    return None


def _called_workflow_outputs(uses: str, workflows: dict[str, Workflow]) -> tuple[str, ...] | None:
    target = workflows.get(uses.rsplit("/", 1)[-1])
    if target is None or "workflow_call" not in target.on:
        return None
    call = target.on["workflow_call"] or {}
    return tuple((call.get("outputs") or {}).keys())


def check_outputs(workflows: list[Workflow], cli: CliModel, command_paths: dict, root: Path) -> list[Problem]:
    problems: list[Problem] = []
    by_name = {wf.name: wf for wf in workflows}
    for wf in workflows:
        for job_id, job in wf.jobs.items():
            steps = {s.get("id"): s for s in job.get("steps") or [] if s.get("id")}
            needs = job.get("needs") or []
            needs = [needs] if isinstance(needs, str) else list(needs)
            for text in _strings(job):
                for step_id, output in STEP_OUTPUT.findall(text):
                    where = f"job {job_id}"
                    step = steps.get(step_id)
                    if step is None:
                        problems.append(Problem(wf.name, where, f"reads steps.{step_id}.outputs.{output} "
                                                                f"but the job has no step with id {step_id!r}"))
                        continue
                    if "uses" in step:
                        written = _local_action_outputs(step["uses"], root)
                        if written is None:
                            continue  # third-party action outputs are that action's contract
                        source = f"action {step['uses']}"
                    else:
                        key = (wf.name, job_id, step_id)
                        if key in command_paths and command_paths[key] is None:
                            continue  # its command line did not parse: already reported
                        resolved = command_paths.get(key)
                        if resolved is None:
                            problems.append(Problem(wf.name, where, f"reads steps.{step_id}.outputs.{output} "
                                                                    f"but step {step_id!r} runs no parsable ci-tools command"))
                            continue
                        written = cli.outputs(resolved)
                        source = f"`ci-tools {' '.join(resolved.path)}`"
                        if written is None:
                            problems.append(Problem(wf.name, where, f"{source} declares no GITHUB_OUTPUTS, so "
                                                                    f"steps.{step_id}.outputs.{output} cannot be checked"))
                            continue
                    if output not in written:
                        problems.append(Problem(wf.name, where, f"reads steps.{step_id}.outputs.{output}, which "
                                                                f"{source} does not write (it writes: "
                                                                f"{', '.join(written) or 'nothing'})"))
                family = [(need, prefix, True) for need, prefix in NEEDS_OUTPUT_FAMILY.findall(text)]
                for need, output, is_prefix in [(n, o, False) for n, o in NEEDS_OUTPUT.findall(text)] + family:
                    where = f"job {job_id}"
                    if need not in needs:
                        problems.append(Problem(wf.name, where, f"reads needs.{need}.outputs.{output} but "
                                                                f"{need!r} is not in its needs"))
                        continue
                    other = wf.jobs.get(need) or {}
                    if "uses" in other:
                        written = _called_workflow_outputs(other["uses"], by_name) or ()
                    else:
                        written = tuple((other.get("outputs") or {}).keys())
                    if is_prefix:
                        if not any(name.startswith(output) for name in written):
                            problems.append(Problem(wf.name, where, f"reads needs.{need}.outputs[{output}*], but job "
                                                                    f"{need!r} declares no output starting {output!r}"))
                        continue
                    if output not in written:
                        problems.append(Problem(wf.name, where, f"reads needs.{need}.outputs.{output}, which job "
                                                                f"{need!r} does not declare (it declares: "
                                                                f"{', '.join(written) or 'nothing'})"))
    return problems


def check_pinning(workflows: list[Workflow]) -> list[Problem]:
    problems = []
    for wf in workflows:
        lines = wf.text.splitlines()
        for number, line in enumerate(lines, 1):
            m = re.match(r"^\s*(?:-\s+)?uses:\s*([^\s#]+)(.*)$", line)
            if not m:
                continue
            ref, rest = m.group(1).strip("'\""), m.group(2)
            if ref.startswith(LOCAL_PREFIXES) or ref.startswith("docker://"):
                continue
            if not PINNED.match(ref):
                problems.append(Problem(wf.name, f"line {number}", f"{ref} is not pinned by a full 40-hex commit SHA"))
            elif not VERSION_COMMENT.search(rest):
                problems.append(Problem(wf.name, f"line {number}", f"{ref} has no `# vX.Y.Z` comment naming its version"))
    return problems


def check_no_expressions_in_run(workflows: list[Workflow]) -> list[Problem]:
    problems = []
    for wf in workflows:
        for job_id, job in wf.jobs.items():
            for index, step in enumerate(job.get("steps") or []):
                script = step.get("run")
                if isinstance(script, str) and EXPR.search(script):
                    problems.append(Problem(wf.name, f"job {job_id}, step {step.get('id') or index}",
                                            "`${{ }}` inside run:; pass the value through env: and quote \"$VAR\""))
    return problems


def check_all(workflows: list[Workflow], cli: CliModel, root: Path) -> list[Problem]:
    problems, paths = check_invocations(workflows, cli)
    problems += check_outputs(workflows, cli, paths, root)
    problems += check_pinning(workflows)
    problems += check_no_expressions_in_run(workflows)
    return problems


def read_github_output(text: str) -> dict[str, str]:
    """Parse $GITHUB_OUTPUT: `name=value` lines and `name<<DELIM ... DELIM` blocks."""
    outputs, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            outputs[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
        i += 1
    return outputs
