"""The time budget of one runner job (pure): queue, readiness, client and stop, each bounded.

Everything time-bounded derives from it: the Slurm allocation's `--time`, the client's deadline, the
stop sequence, and benchmark.yml's `timeout-minutes` (a test keeps it equal to JOB_TIMEOUT_MINUTES),
so a job always ends itself, stopped and with its status written, before GitHub kills it.

A GitHub cancel (or a `timeout-minutes` expiry) sends SIGINT to the step's process group, then SIGTERM
about 7.5 s later and SIGKILL to the process tree about 2.5 s after that. The whole stop sequence
(CANCEL_STOP_S) fits inside the first window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

QUEUE_TIMEOUT_S = 3600.0          # Slurm: waiting for the allocation to start
READY_TIMEOUT_S = 4 * 3600.0      # big models load slowly (InferenceX allows 4 h); a hang still ends
CLIENT_GRACE_S = 600.0            # AIPerf's startup, warmup and drain beyond the benchmark duration
FIXED_SEQ_CLIENT_S = 3600.0       # fixed-sequence rows have no duration: a request count instead
STOP_GRACE_S = 10.0               # normal end: SIGTERM, then this long before SIGKILL
CANCEL_WINDOW_S = 7.5             # GitHub: SIGINT ... SIGTERM
CANCEL_GRACE_S = 2.0              # cancel: SIGTERM to every process group, then this long before SIGKILL
CANCEL_STOP_S = 6.0               # cancel: everything, including `docker rm -f` / `scancel` and the sweep
ALLOCATION_MARGIN_S = 300.0       # Slurm --time beyond readiness + client + stop
JOB_TIMEOUT_MINUTES = 420         # benchmark.yml `timeout-minutes`
OTHER_STEPS_S = 15 * 60.0         # checkout, setup, results process, uploads, cleanup


@dataclass(frozen=True)
class Budget:
    queue_s: float
    ready_s: float
    client_s: float
    stop_s: float = STOP_GRACE_S + 30.0

    @property
    def run_s(self) -> float:
        """The whole `runner run` step in the worst case."""
        return self.queue_s + self.ready_s + self.client_s + self.stop_s

    @property
    def allocation_s(self) -> float:
        """How long the scheduler may hold the node once the allocation starts (Slurm --time)."""
        return self.ready_s + self.client_s + self.stop_s + ALLOCATION_MARGIN_S

    def problems(self, job_timeout_minutes: float = JOB_TIMEOUT_MINUTES) -> list[str]:
        limit = job_timeout_minutes * 60 - OTHER_STEPS_S
        if self.run_s > limit:
            return [f"the job needs up to {math.ceil(self.run_s / 60)} min (queue {self.queue_s / 60:g} + readiness "
                    f"{self.ready_s / 60:g} + client {self.client_s / 60:g} + stop {self.stop_s / 60:g}), more than "
                    f"the {math.floor(limit / 60)} min benchmark.yml leaves it (timeout-minutes "
                    f"{job_timeout_minutes:g} minus {OTHER_STEPS_S / 60:g} for the other steps); lower "
                    "--queue-timeout/--ready-timeout or the row's duration"]
        return []


def client_timeout(duration_s: float | None) -> float:
    return duration_s + CLIENT_GRACE_S if duration_s else FIXED_SEQ_CLIENT_S


def job_budget(duration_s: float | None, *, queue_s: float = QUEUE_TIMEOUT_S, ready_s: float = READY_TIMEOUT_S,
               client_s: float | None = None) -> Budget:
    return Budget(queue_s=queue_s, ready_s=ready_s,
                  client_s=client_s if client_s is not None else client_timeout(duration_s))
