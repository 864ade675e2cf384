"""The supervisor with real processes: placeholders resolved from the scheduler, cleanup of what started."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from ci_tools.runner.budget import Budget
from ci_tools.runner.ready import HttpReady
from ci_tools.runner.spec import ClientRun, JobFailed, JobSpec, Local, Proc, Role, SbatchAllocation
from ci_tools.runner.supervise import JobContext, supervise
from tests.ports import free_port

STUB = Path(__file__).with_name("stub_server.py")
LOCAL = Local()




def sbatch(submit: list[str], locate: list[str], describe: tuple[str, ...] = ()) -> SbatchAllocation:
    return SbatchAllocation(tuple(submit), tuple(locate), describe, ("true",), "server.log")


def job(services: list[Proc], ready: list[str], placement: Local | SbatchAllocation = LOCAL, clients: tuple[ClientRun, ...] = (),
        queue_s: float = 600.0, ready_s: float = 20.0) -> JobSpec:
    return JobSpec(label="", placement=placement, budget=Budget(queue_s, ready_s, 30.0), services=tuple(services),
                   ready=tuple(HttpReady(u) for u in ready), clients=clients, documents=lambda placed, engine: [])


def run(spec: JobSpec, out: Path, said: list[str] | None = None, grace_s: float = 5.0) -> dict:
    ctx = JobContext(out, say=said.append if said is not None else lambda m: None, stop_grace_s=grace_s)
    return supervise(spec, ctx).as_dict()


def server(argv: list[str], name: str = "server") -> Proc:
    return Proc(Role(name), name, tuple(argv), log=f"{name}.log", what=f"the {name}")


def test_scheduler_job_id_and_node_address_fill_urls_and_later_commands(tmp_path):
    port = free_port()
    # stand-ins for `sbatch --parsable` (prints the job id), `squeue --jobs=ID` (state and node) and
    # `scontrol show node NODE` (the node's NodeAddr: its name is no DNS name)
    submit = [sys.executable, "-c", "print('4242;cluster')"]
    locate = [sys.executable, "-c", "import sys; assert sys.argv[1] == '--jobs=4242'; print('RUNNING gpu-17')",
              "--jobs={server_jobid}"]
    describe = (sys.executable, "-c", "import sys; assert sys.argv[1] == 'gpu-17'; "
                "print('NodeName=gpu-17 Arch=x86_64 NodeAddr=127.0.0.1 NodeHostName=gpu-17')", "{server_node}")
    client = ClientRun(Proc(Role.CLIENT, "client", (
        sys.executable, "-c", "import sys; assert sys.argv[1:] == ['4242', 'http://127.0.0.1:%d']; print('ok')" % port,
        "{server_jobid}", f"http://{{server_addr}}:{port}"), log="client.log", what="the client"), 30.0, "AIPerf")
    said: list[str] = []
    status = run(job([server([sys.executable, str(STUB), "--port", str(port)])],
                     [f"http://{{server_addr}}:{port}/health"], sbatch(submit, locate, describe), (client,)),
                 tmp_path, said)
    assert status["ok"] is True and status["slurm_job_id"] == "4242"
    assert status["node"] == "gpu-17" and status["node_addr"] == "127.0.0.1"
    assert "server node gpu-17 is reached at its NodeAddr 127.0.0.1" in said
    assert (tmp_path / "client.log").read_text().strip() == "ok"


def test_a_node_without_a_nodeaddr_is_reached_by_its_name_and_says_so(tmp_path):
    port = free_port()
    placement = sbatch([sys.executable, "-c", "print(5)"], [sys.executable, "-c", "print('RUNNING 127.0.0.1')"],
                       (sys.executable, "-c", "import sys; sys.exit('slurm_load_node error')"))
    said: list[str] = []
    status = run(job([server([sys.executable, str(STUB), "--port", str(port)])],
                     [f"http://{{server_addr}}:{port}/health"], placement), tmp_path, said)
    assert status["ok"] is True and status["node_addr"] == "127.0.0.1"
    assert any(m.startswith("Slurm gave no NodeAddr for 127.0.0.1") for m in said), said


@pytest.mark.parametrize("state,message", [
    ("", "Slurm job 7 ended before it ran (state gone)"),
    ("FAILED (null)", "Slurm job 7 ended before it ran (state FAILED)"),
])
def test_allocation_that_ends_before_running_is_reported(tmp_path, state, message):
    placement = sbatch([sys.executable, "-c", "print(7)"], [sys.executable, "-c", f"print({state!r})"])
    with pytest.raises(JobFailed) as exc:
        run(job([server([sys.executable, "-c", "print('never started')"])], ["http://{server_node}:1/health"],
                placement, ready_s=10), tmp_path, grace_s=1)
    assert exc.value.phase == "queue" and exc.value.message.startswith(message)
    assert not (tmp_path / "server.log").read_text().count("never started")


def test_allocation_refused_by_the_scheduler(tmp_path):
    placement = sbatch([sys.executable, "-c", "import sys; sys.exit('sbatch: error: invalid partition')"], ["true"])
    with pytest.raises(JobFailed) as exc:
        run(job([server(["true"])], [], placement, ready_s=10), tmp_path)
    assert exc.value.message == "the scheduler refused the server's allocation (exit 1)"
    assert "invalid partition" in exc.value.tail


def test_queue_deadline(tmp_path):
    placement = sbatch([sys.executable, "-c", "print(9)"], [sys.executable, "-c", "print('PENDING (null)')"])
    with pytest.raises(JobFailed) as exc:
        run(job([server(["true"])], [], placement, queue_s=0.5, ready_s=10), tmp_path)
    assert exc.value.message.startswith("Slurm job 9 did not start within 0.5 s (state PENDING)")


def test_engine_and_router_both_waited_for_then_stopped(tmp_path):
    import re

    engine, router = free_port(), free_port()
    # the stub answers like a router too; what matters is two services, both waited for and stopped
    services = [server([sys.executable, str(STUB), "--port", str(engine)]),
                server([sys.executable, str(STUB), "--port", str(router)], "router")]
    client = ClientRun(Proc(Role.CLIENT, "client", (sys.executable, "-c", "print('ok')"), log="client.log"), 20.0,
                       "AIPerf")
    urls = [f"http://127.0.0.1:{engine}/health", f"http://127.0.0.1:{router}/health",
            f"http://127.0.0.1:{router}/v1/models"]
    said: list[str] = []
    status = run(job(services, urls, clients=(client,)), tmp_path, said)
    assert status["ok"] is True
    assert [s.split(" after")[0] for s in said if s.startswith("ready:")] == [f"ready: {u}" for u in urls]
    for log in ("server.log", "router.log"):
        text = (tmp_path / log).read_text()
        port = int(re.search(r"127\.0\.0\.1:(\d+)", text).group(1))
        with socket.socket() as s:  # nobody listens any more: the service was stopped
            assert s.connect_ex(("127.0.0.1", port)) != 0, log


class _SignalInFinalizer:
    """Sends this process SIGINT from inside `__del__`: the handler's Cancelled is raised in the finalizer,
    where Python prints it and drops it (seen in CI: a cancel during the readiness wait landed in one)."""

    def __del__(self) -> None:
        import os
        import signal
        import time

        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)       # the handler runs here, inside the finalizer


def test_a_cancel_dropped_by_a_finalizer_still_cancels_the_job(tmp_path, capsys):
    """The signal is recorded before it is raised; the next wait raises it again, so the job is cancelled
    and stopped at once instead of waiting out its readiness deadline."""
    import signal
    import time

    port = free_port()
    said: list[str] = []

    def say(message: str) -> None:
        said.append(message)
        if message.startswith("waiting for"):
            _SignalInFinalizer()   # dropped at once: its __del__ runs here

    ctx = JobContext(tmp_path, say=say, stop_grace_s=1.0)
    never = server([sys.executable, str(STUB), "--port", str(port), "--never-ready"])
    start = time.monotonic()
    with pytest.raises(JobFailed) as exc:
        supervise(job([never], [f"http://127.0.0.1:{port}/health"], ready_s=30.0), ctx)
    assert exc.value.exit_code == 128 + signal.SIGINT and "cancelled by SIGINT" in exc.value.message
    assert time.monotonic() - start < 15, "the cancel was lost: the job waited for its readiness deadline"
    assert "Traceback" not in capsys.readouterr().err   # the dropped Cancelled is no error of its own
