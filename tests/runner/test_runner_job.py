"""run_job with real processes: placeholders resolved from the scheduler, cleanup of what started."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from ci_tools.runner.backends import Launch
from ci_tools.runner.job import JobFailed, run_job

STUB = Path(__file__).with_name("stub_server.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scheduler_job_id_and_node_fill_urls_and_later_commands(tmp_path):
    port = free_port()
    # stand-ins for `sbatch --parsable` (prints the job id) and `squeue --jobs=ID` (state and node)
    submit = [sys.executable, "-c", "print('4242;cluster')"]
    locate = [sys.executable, "-c", "import sys; assert sys.argv[1] == '--jobs=4242'; print('RUNNING 127.0.0.1')",
              "--jobs={server_jobid}"]
    server = Launch("server", [sys.executable, str(STUB), "--port", str(port)], {}, [], "server.log",
                    submit=submit, locate=locate)
    client = Launch("client", [sys.executable, "-c",
                               "import sys; assert sys.argv[1:] == ['4242', 'http://127.0.0.1:%d']; print('ok')" % port,
                               "{server_jobid}", f"http://{{server_node}}:{port}"], {}, [], "client.log")
    status = run_job([server, client], tmp_path, [f"http://{{server_node}}:{port}/health"], ready_timeout_s=20,
                     client_timeout_s=30, say=lambda m: None, stop_grace_s=5)
    assert status["ok"] is True and status["slurm_job_id"] == "4242" and status["node"] == "127.0.0.1"
    assert (tmp_path / "client.log").read_text().strip() == "ok"


@pytest.mark.parametrize("state,message", [
    ("", "Slurm job 7 ended before it ran (state gone)"),
    ("FAILED (null)", "Slurm job 7 ended before it ran (state FAILED)"),
])
def test_allocation_that_ends_before_running_is_reported(tmp_path, state, message):
    server = Launch("server", [sys.executable, "-c", "print('never started')"], {}, [["true"]], "server.log",
                    submit=[sys.executable, "-c", "print(7)"], locate=[sys.executable, "-c", f"print({state!r})"])
    with pytest.raises(JobFailed) as exc:
        run_job([server], tmp_path, ["http://{server_node}:1/health"], ready_timeout_s=10, client_timeout_s=10,
                say=lambda m: None, stop_grace_s=1)
    assert exc.value.phase == "queue" and exc.value.message.startswith(message)
    assert not (tmp_path / "server.log").read_text().count("never started")


def test_allocation_refused_by_the_scheduler(tmp_path):
    server = Launch("server", ["true"], {}, [], "server.log",
                    submit=[sys.executable, "-c", "import sys; sys.exit('sbatch: error: invalid partition')"],
                    locate=["true"])
    with pytest.raises(JobFailed) as exc:
        run_job([server], tmp_path, [], ready_timeout_s=10, client_timeout_s=10, say=lambda m: None)
    assert exc.value.message == "the scheduler refused the server's allocation (exit 1)"
    assert "invalid partition" in exc.value.tail


def test_queue_deadline(tmp_path):
    server = Launch("server", ["true"], {}, [], "server.log", submit=[sys.executable, "-c", "print(9)"],
                    locate=[sys.executable, "-c", "print('PENDING (null)')"])
    with pytest.raises(JobFailed) as exc:
        run_job([server], tmp_path, [], ready_timeout_s=10, client_timeout_s=10, queue_timeout_s=0.5,
                say=lambda m: None)
    assert exc.value.message.startswith("Slurm job 9 did not start within 0.5 s (state PENDING)")


def test_engine_and_router_both_waited_for_then_stopped(tmp_path):
    import re

    engine, router = free_port(), free_port()
    server = Launch("server", [sys.executable, str(STUB), "--port", str(engine)], {}, [], "server.log")
    # the stub answers like a router too; what matters is two services, both waited for and stopped
    front = Launch("router", [sys.executable, str(STUB), "--port", str(router)], {}, [], "router.log")
    client = Launch("client", [sys.executable, "-c", "print('ok')"], {}, [], "client.log")
    urls = [f"http://127.0.0.1:{engine}/health", f"http://127.0.0.1:{router}/health",
            f"http://127.0.0.1:{router}/v1/models"]
    said: list[str] = []
    status = run_job([server, front, client], tmp_path, urls, ready_timeout_s=20, client_timeout_s=20,
                     say=said.append, stop_grace_s=5)
    assert status["ok"] is True
    assert [s.split(" after")[0] for s in said if s.startswith("ready:")] == [f"ready: {u}" for u in urls]
    for log in ("server.log", "router.log"):
        text = (tmp_path / log).read_text()
        port = int(re.search(r"127\.0\.0\.1:(\d+)", text).group(1))
        with socket.socket() as s:  # nobody listens any more: the service was stopped
            assert s.connect_ex(("127.0.0.1", port)) != 0, log
