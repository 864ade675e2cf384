"""Several Slurm nodes on this one machine: one slurmctld and one slurmd per NodeName (`slurmd -N`).

`MultiNodeSlurm(nodes=3)` is `LocalSlurm` (slurm_cluster.py) with its single node replaced by
cit-n1..N: each has its own slurmd port, spool, pid and log file and its own fake GPUs, and
NodeAddr 127.0.0.1 (Debian's slurmd runs several instances on one host when each has a distinct
NodeName and port). Slurm then allocates, places and cancels steps per node exactly as on a cluster;
only the network is shared, so what runs on the nodes must use distinct ports.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field

from slurm_cluster import LocalSlurm, SlurmUnavailable, _free_ports


@dataclass
class MultiNodeSlurm(LocalSlurm):
    nodes: int = 3
    names: list[str] = field(default_factory=list)

    def _write_config(self) -> None:
        super()._write_config()
        d = self.root
        self.names = [f"cit-n{i}" for i in range(1, self.nodes + 1)]
        ports = _free_ports(self.nodes)
        text = self.conf.read_text()
        node_line = next(line for line in text.splitlines() if line.startswith("NodeName="))
        lines = "\n".join(re.sub(r"^NodeName=\S+", f"NodeName={n}", node_line) + f" Port={p}"
                          for n, p in zip(self.names, ports))
        text = text.replace(node_line, lines)
        text = re.sub(r"^PartitionName=(\S+) Nodes=\S+", lambda m: f"PartitionName={m.group(1)} Nodes="
                      + ",".join(self.names), text, flags=re.M)
        text = re.sub(r"^SlurmdPort=\d+\n", "", text, flags=re.M)
        for key, value in (("SlurmdSpoolDir", f"{d}/spool-%n"), ("SlurmdPidFile", f"{d}/slurmd-%n.pid"),
                           ("SlurmdLogFile", f"{d}/slurmd-%n.log")):
            text = re.sub(rf"^{key}=.*$", f"{key}={value}", text, flags=re.M)
        self.conf.write_text(text)
        gres = (d / "gres.conf").read_text().split(" ", 1)[1]
        (d / "gres.conf").write_text("".join(f"NodeName={n} {gres}" for n in self.names))
        for n in self.names:
            (d / f"spool-{n}").mkdir(exist_ok=True)

    def _boot(self, timeout_s: float) -> None:
        env = {**os.environ, **self.env}
        for argv in (["slurmctld", "-i"], *(["slurmd", "-N", n] for n in self.names)):
            res = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
            if res.returncode != 0:
                raise SlurmUnavailable(f"`{' '.join(argv)}` failed (exit {res.returncode}): "
                                       f"{(res.stderr or res.stdout).strip()[:400]}\n{self._logs()}")
        deadline = time.monotonic() + timeout_s
        states: list[str] = []
        while time.monotonic() < deadline:
            res = self.run("sinfo", "--noheader", "--Node", "--format=%N %T")
            states = res.stdout.split("\n")
            idle = {line.split()[0] for line in states if line.endswith(" idle")}
            if idle == set(self.names):
                return
            for line in states:
                if any(s in line for s in ("inval", "drain", "down")):
                    self.run("scontrol", "update", f"nodename={line.split()[0]}", "state=resume")
            time.sleep(0.3)
        raise SlurmUnavailable(f"the Slurm nodes did not all become idle within {timeout_s:g} s ({states})\n"
                               f"{self._logs()}")

    def stop(self) -> None:
        if self.root is not None and self.conf is not None and self.conf.exists():
            try:
                self.run("scancel", "--full", "--user=root", timeout=10)
                self.wait_no_jobs(timeout_s=15)   # as LocalSlurm: slurmd ends the steps before it stops
            except (OSError, subprocess.TimeoutExpired):
                pass
            for pidfile in self.root.glob("slurmd-*.pid"):
                try:
                    pid = int(pidfile.read_text().strip())
                    os.kill(pid, signal.SIGTERM)
                except (OSError, ValueError):
                    continue
                for _ in range(50):
                    try:
                        os.kill(pid, 0)
                    except ProcessLookupError:
                        break
                    time.sleep(0.1)
        super().stop()
