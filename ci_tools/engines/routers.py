"""Routers in front of data-parallel engines: what each released version is called, reads and accepts.

The master declares a router by name and version (`router: {name, version}`); the recipe repeats it
and adds the router's own options. Two facts decide whether a routing intent really works, and both
depend on the version, so they live here and nowhere else:

- which HTTP header the router reads as the routing key (AIPerf sends its session id in the header
  the client is told to use, so the client's `--session-header` comes from this table);
- how the router is started, so the version that runs is the one declared: the command checks the
  installed distribution's version before it starts the router, and exits with a message otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_tools.engines import Command, render_args


@dataclass(frozen=True)
class RouterRelease:
    name: str                     # the master's router name
    version: str
    dist: str                     # the Python distribution whose version is checked at start
    module: str                   # `python3 -m MODULE` starts it
    routing_key_header: str       # the header this release reads as the routing key
    key_policies: tuple[str, ...]  # policies under which that key decides the worker
    note: str = ""
    # pinned wheels installed into the job directory before it starts, where the engine's image lacks it
    # (engines/install.py: pip --require-hashes once per job)
    requirements: tuple[str, ...] = ()
    # the option telling the router how many data-parallel ranks stand behind one worker URL (it then routes
    # to a rank by header), rendered from the point; None: the router sees only the URL
    dp_ranks_option: str | None = None


RELEASES = {
    ("sglang-router", "0.3.2"): RouterRelease(
        "sglang-router", "0.3.2", "sglang-router", "sglang_router.launch_router", "x-smg-routing-key",
        ("manual",),
        note="reads the routing key only under the manual policy; cache_aware routes on prompt prefixes"),
    ("smg", "1.13.0"): RouterRelease(
        "smg", "1.13.0", "smg", "smg.launch_router", "x-smg-routing-key",
        ("manual", "*routing-key-override"),
        note="any policy keeps a session on one worker with --routing-key-override (--sticky-sessions)"),
    # vllm-project/router: the vLLM images do not carry it (InferenceX pip-installs it per job); its compiled
    # core reads the session key from x-session-id under consistent_hash, and with
    # --intra-node-data-parallel-size it expands one vLLM URL into one worker per DP rank (X-data-parallel-rank)
    ("vllm-router", "0.1.14"): RouterRelease(
        "vllm-router", "0.1.14", "vllm-router", "vllm_router.launch_router", "x-session-id", ("consistent_hash",),
        note="routes a session by x-session-id under consistent_hash only",
        requirements=("vllm-router==0.1.14 "
                      "--hash=sha256:1926530bb9eb9137404a421c9970ec4a6a5ddc258b22aac93bf5804ff73d79db "
                      "--hash=sha256:adf8ad24f47ccd2714a0e9f876c86de76026ac5109e2386419e65218ff95b452",),
        dp_ranks_option="--intra-node-data-parallel-size"),
}

# `python3 -c GUARD DIST VERSION MODULE ARGS...`: refuse to start any other version than the declared
# one, then run the router module in this same process (so signals and exit codes are the router's).
GUARD = ("import importlib.metadata as m, runpy, sys; d, w, mod = sys.argv[1:4]; "
         "h = next((x.version for x in m.distributions(name=d)), None); "
         "h == w or sys.exit(f'ci-tools: the master declares router {d} {w}, but the image has {h or \"no \" + d}; "
         "use an image with {d}=={w} or declare what it has'); "
         "sys.argv = [mod, *sys.argv[4:]]; runpy.run_module(mod, run_name='__main__', alter_sys=True)")


def release(name: str, version: str) -> RouterRelease | None:
    return RELEASES.get((str(name), str(version)))


def known() -> str:
    return ", ".join(f"{n} {v}" for n, v in RELEASES)


def metrics_options(port: int, args: dict | None) -> list[str]:
    """The router's Prometheus port, next to its own HTTP port unless the recipe's args set it.

    Both releases default to 29000 for every router on a host, so a second job's router on a shared
    node (docker/process backends, Slurm with `exclusive: false`) cannot bind it. PORT + 1 is distinct
    wherever the operator gives each runner its own port (CI_TOOLS_PORT)."""
    if "prometheus-port" in (args or {}):
        return []
    return ["--prometheus-port", str(port + 1)]


def command(rel: RouterRelease, host: str, port: int, worker_urls: list[str], args: dict, dp_ranks: int = 1,
            install_dir: str = "") -> Command:
    """The router in front of WORKER_URLS; with DP_RANKS > 1 and a release that can address them, told how many
    data-parallel ranks each URL holds. A release the image lacks is installed into INSTALL_DIR first."""
    options = ["--host", host, "--port", str(port), "--worker-urls", *worker_urls, *metrics_options(port, args)]
    if rel.dp_ranks_option and dp_ranks > 1 and rel.dp_ranks_option.lstrip("-") not in args:
        options += [rel.dp_ranks_option, str(dp_ranks)]
    launcher: tuple[str, ...] = ("python3", "-c", GUARD, rel.dist, rel.version, rel.module)
    if rel.requirements:
        from ci_tools.engines import install

        launcher = tuple(install.wrap(list(launcher), install_dir or "router-install", list(rel.requirements)))
    return Command(launcher, (*options, *render_args(args)), rel.name)


def problems(router: dict | None) -> list[str]:
    """Why a recipe's router block cannot be served (empty when it can)."""
    if router is None:
        return []
    name, version = router.get("name"), router.get("version")
    if release(str(name), str(version)) is None:
        return [f"router {name} {version} is not known to ci-tools (known: {known()}); declare one of those in "
                "the master and the recipe, or add the release to ci_tools/engines/routers.py with its "
                "routing-key header"]
    if "routing-key-header" in router:
        return ["`routing-key-header` is not a recipe setting: the header the router reads is a fact of its "
                "version (ci_tools/engines/routers.py); write `routing-key: session-id` to route each AIPerf "
                "session by its id"]
    key = router.get("routing-key")
    if key not in (None, "session-id"):
        return [f"`routing-key: {key}` is not supported; the only routing key ci-tools sends is `session-id` "
                "(AIPerf's session id)"]
    rel = release(str(name), str(version))
    assert rel is not None       # refused above when unknown
    policy = str((router.get("args") or {}).get("policy", ""))
    if key == "session-id" and rel.key_policies == ("consistent_hash",) and policy != "consistent_hash":
        return [f"{name} {version} routes by the session key only under `policy: consistent_hash` (its args say "
                f"{policy or 'nothing, so its default'}); set `args: {{policy: consistent_hash}}` on the router"]
    return []
