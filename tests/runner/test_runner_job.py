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


def test_scheduler_location_fills_urls_and_later_commands(tmp_path):
    port = free_port()
    # a stand-in for `squeue`: says the job runs as 4242 on the node "127.0.0.1"
    locate = [sys.executable, "-c", "print('4242 127.0.0.1')"]
    server = Launch("server", [sys.executable, str(STUB), "--port", str(port)], {}, [], "server.log", locate=locate)
    client = Launch("client", [sys.executable, "-c",
                               "import sys; assert sys.argv[1:] == ['4242', 'http://127.0.0.1:%d']; print('ok')" % port,
                               "{server_jobid}", f"http://{{server_node}}:{port}"], {}, [], "client.log")
    status = run_job([server, client], tmp_path, [f"http://{{server_node}}:{port}/health"], ready_timeout_s=20,
                     client_timeout_s=30, say=lambda m: None, stop_grace_s=5)
    assert status["ok"] is True
    assert (tmp_path / "client.log").read_text().strip() == "ok"


def test_server_that_dies_before_scheduling_is_reported(tmp_path):
    server = Launch("server", [sys.executable, "-c", "import sys; print('no GPUs'); sys.exit(3)"], {}, [],
                    "server.log", locate=[sys.executable, "-c", "print('')"])
    with pytest.raises(JobFailed) as exc:
        run_job([server], tmp_path, ["http://{server_node}:1/health"], ready_timeout_s=10, client_timeout_s=10,
                say=lambda m: None, stop_grace_s=1)
    assert exc.value.message == "the server exited with code 3 before it was scheduled"
    assert "no GPUs" in exc.value.tail


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
