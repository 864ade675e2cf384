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


RELEASES = {
    ("sglang-router", "0.3.2"): RouterRelease(
        "sglang-router", "0.3.2", "sglang-router", "sglang_router.launch_router", "x-smg-routing-key",
        ("manual",),
        note="reads the routing key only under the manual policy; cache_aware routes on prompt prefixes"),
    ("smg", "1.13.0"): RouterRelease(
        "smg", "1.13.0", "smg", "smg.launch_router", "x-smg-routing-key",
        ("manual", "*routing-key-override"),
        note="any policy keeps a session on one worker with --routing-key-override (--sticky-sessions)"),
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


def command(rel: RouterRelease, host: str, port: int, worker_urls: list[str], args: dict) -> Command:
    options = ["--host", host, "--port", str(port), "--worker-urls", *worker_urls, *metrics_options(port, args),
               *render_args(args)]
    return Command(("python3", "-c", GUARD, rel.dist, rel.version, rel.module), tuple(options), rel.name)


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
    return []
