"""Self-hosted runner jobs: serve one matrix row's recipe point, drive the client, stop everything.

Core (pure; may import `ci_tools.config`, `ci_tools.engines`, `ci_tools.evals` core modules,
`ci_tools.errors` and each other, never an adapter, a process, the network or the CLI):
`plan.py` (row + point -> engine/router/client commands, `JobPlan`), `backends.py` (docker /
slurm / process launches and their stops), `disagg.py` (multi-node plans and placement),
`budget.py`, `ready.py` (readiness over injected clock and HTTP), `nodecheck.py`, `sampler.py`,
`servable.py`, `digest.py` (job file and artifact names are in `ci_tools.names`), `spec.py` (one job as
data, `JobSpec`) and `produce.py` (a planned point -> `JobSpec`).

Shell (I/O): `flow.py` (the commands' flows: row -> recipe -> job, cleanup, digest; what `cli/runner.py`
calls), and the adapters `supervise.py` (the one lifecycle that runs a `JobSpec`), `procs.py`
(processes), `allocation.py` (Slurm), `cleanup.py`, `early.py`, `slack.py`, `screen_git.py`, `seal.py`
(the client's exports hashed into `ci_tools.custody`'s record). Shell modules may import anything; core
may not import them (tests/test_layers.py checks both). Never `ci_tools.results`: it shares this floor.
"""
