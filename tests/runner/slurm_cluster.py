"""A real local Slurm (Debian's slurm-wlm + munge) on this machine, for the runner tests.

`LocalSlurm(nodes=1)` is one node named `localhost`; `LocalSlurm(nodes=3)` is one slurmctld and one
slurmd per NodeName cit-n1..N (`slurmd -N`), each with its own port, spool, pid and log file and its
own fake GPUs, all at NodeAddr 127.0.0.1 (Debian's slurmd runs several instances on one host when each
has a distinct NodeName and port). Slurm then allocates, places and cancels steps per node exactly as
on a cluster; only the network is shared, so what runs on the nodes must use distinct ports.

`start()` writes a private configuration into its own temporary directory (state, spool,
logs, pid files, fake GPU device files) with free ports, so several test runs on one machine each
get their own controller, and starts its own munged (its own key and socket, named to Slurm by
`AuthInfo=socket=`): `stop()` ends every daemon it started, munged included, and touches no other
test run's. The node has fake GPUs (`gres/gpu` over character devices), so `--gpus-per-node`
and CUDA_VISIBLE_DEVICES behave as on a GPU node.

Anything that keeps Slurm from starting raises `SlurmUnavailable` with the reason and the daemons'
log tails; the fixture turns it into a test failure, never a skip (`python3 dev.py test` installs the
packages, see dev.py `APT_NEEDS`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.ports import free_ports

DAEMONS = ("slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel", "sinfo", "scontrol", "munge", "munged",
           "unmunge")
INSTALL_HINT = ("install them with `apt-get install slurm-wlm munge` as root, or run `python3 dev.py test`, "
                "which does that on Debian/Ubuntu")


class SlurmUnavailable(Exception):
    pass


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def munge_works(socket_path: Path) -> bool:
    try:
        cred = subprocess.run(["munge", "-n", f"--socket={socket_path}"], capture_output=True, timeout=10)
        if cred.returncode != 0:
            return False
        return subprocess.run(["unmunge", f"--socket={socket_path}"], input=cred.stdout, capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def start_munge(folder: Path) -> int:
    """A munged of this cluster alone in FOLDER (key, socket, pid, log); returns its pid once it answers."""
    folder.mkdir(mode=0o700)
    key = folder / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    socket_path = folder / "munge.socket"
    cmd = ["munged", "--force", f"--socket={socket_path}", f"--key-file={key}", f"--pid-file={folder / 'munged.pid'}",
           f"--log-file={folder / 'munged.log'}", f"--seed-file={folder / 'munged.seed'}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if munge_works(socket_path):
            return int((folder / "munged.pid").read_text().strip())
        time.sleep(0.1)
    raise SlurmUnavailable(f"munged does not answer after `{' '.join(cmd)}` (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[:400]}\n{_tail(folder / 'munged.log')}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _terminate(*pids: int, grace_s: float = 5) -> None:
    """SIGTERM to every pid at once, up to GRACE_S for them to go, then SIGKILL. Together: each daemon takes
    1.5-2 s to shut down, and one after the other a 3-node cluster took 10 s to stop."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclass
class LocalSlurm:
    gpus: int = 4
    nodes: int = 1
    cpus: int = field(default_factory=lambda: os.cpu_count() or 2)
    node: str = "localhost"          # the one node's name when nodes == 1
    partition: str = "debug"
    root: Path | None = None
    conf: Path | None = None
    ports: list[int] = field(default_factory=list)   # slurmctld's, then one per node
    munged: int = 0                                   # the pid of this cluster's own munged

    @property
    def names(self) -> list[str]:
        return [self.node] if self.nodes == 1 else [f"cit-n{i}" for i in range(1, self.nodes + 1)]

    @property
    def env(self) -> dict[str, str]:
        """What a client (srun, sbatch, squeue, scancel, ci-tools) needs to reach this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})

    def _write_config(self) -> None:
        d = self.root
        for sub in ("state", "dev", *(f"spool-{n}" for n in self.names)):
            (d / sub).mkdir(exist_ok=True)
        for i in range(self.gpus):
            dev = d / "dev" / f"gpu{i}"
            if not dev.exists():
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # like /dev/null: a character device
        ctl, *node_ports = self.ports
        (d / "plugstack.conf").write_text("")
        (d / "gres.conf").write_text("".join(f"NodeName={n} Name=gpu File={d}/dev/gpu[0-{self.gpus - 1}]\n"
                                             for n in self.names))
        (d / "cgroup.conf").write_text("")
        nodes = "".join(f"NodeName={n} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=1000 Gres=gpu:{self.gpus} "
                        f"State=UNKNOWN Port={port}\n" for n, port in zip(self.names, node_ports))
        self.conf = d / "slurm.conf"
        self.conf.write_text(f"""ClusterName=cit{ctl}
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
SlurmctldPort={ctl}
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
KillWait=5
MinJobAge=2
PlugStackConfig={d}/plugstack.conf
{nodes}PartitionName={self.partition} Nodes={",".join(self.names)} Default=YES MaxTime=INFINITE State=UP
""")

    def _pids(self) -> list[int]:
        """slurmd's of every node, then slurmctld's (the order they are stopped in)."""
        pids = []
        for name in [*(f"slurmd-{n}" for n in self.names), "slurmctld"]:
            try:
                pids.append(int((self.root / f"{name}.pid").read_text().strip()))
            except (OSError, ValueError):
                continue
        return pids

    def _logs(self) -> str:
        return "\n".join(f"---- {name}.log ----\n{_tail(self.root / f'{name}.log')}"
                         for name in ("slurmctld", *(f"slurmd-{n}" for n in self.names)))

    def start(self, timeout_s: float = 45) -> "LocalSlurm":
        missing = [b for b in DAEMONS if shutil.which(b) is None]
        if missing:
            raise SlurmUnavailable(f"Slurm/munge programs are missing: {', '.join(missing)}; {INSTALL_HINT}")
        if os.geteuid() != 0:
            raise SlurmUnavailable("the local Slurm runs its daemons as root (SlurmUser=root, fake GPU device "
                                   "files); run the tests as root, as CI does")
        last = ""
        for _attempt in range(3):  # a free port can be taken between choosing it and binding it
            self.root = Path(tempfile.mkdtemp(prefix="cit-slurm-"))
            self.ports = free_ports(1 + self.nodes)
            self._write_config()
            try:
                self.munged = start_munge(self.root / "munge")
                self._boot(timeout_s)
                return self
            except SlurmUnavailable as exc:
                last = str(exc)
                self.stop()
        raise SlurmUnavailable(last)

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
            states = [line for line in res.stdout.splitlines() if line.strip()] if res.returncode == 0 else []
            if {line.split()[0] for line in states if line.endswith(" idle")} == set(self.names):
                return
            for line in states:
                if any(s in line for s in ("inval", "drain", "down")):
                    self.run("scontrol", "update", f"nodename={line.split()[0]}", "state=resume")
            time.sleep(0.3)
        raise SlurmUnavailable(f"the Slurm node(s) {', '.join(self.names)} did not all become idle within "
                               f"{timeout_s:g} s ({states or 'state unknown'})\n{self._logs()}")

    def jobs(self) -> list[str]:
        """Every job this cluster still knows (pending, running or completing), as `id state name`."""
        res = self.run("squeue", "--noheader", "--format=%i %T %j")
        return [line for line in res.stdout.splitlines() if line.strip()]

    def wait_no_jobs(self, timeout_s: float = 20) -> list[str]:
        deadline = time.monotonic() + timeout_s
        while True:
            left = self.jobs()
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.25)

    def stop(self) -> None:
        if self.root is None:
            return
        if self.conf is not None and self.conf.exists():
            try:
                self.run("scancel", "--full", "--user=root", timeout=10)
                # let slurmd end the steps: a slurmstepd whose slurmd is gone lingers as an orphan
                self.wait_no_jobs(timeout_s=15)
            except (OSError, subprocess.TimeoutExpired):
                pass
        _terminate(*self._pids())
        if self.munged:   # after Slurm's daemons, which need it to the end
            # no grace: munged took 2 s to exit on SIGTERM, and what it would save (its seed file) lies in the
            # cluster's folder, removed below
            _terminate(self.munged, grace_s=0)
            self.munged = 0
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None
