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
