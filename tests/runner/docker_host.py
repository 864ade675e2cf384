"""A real Docker daemon for the docker backend's tests: the daemon check, a local registry and an image.

`python3 dev.py test` installs Debian's docker.io and docker-registry and starts dockerd when no daemon
answers (dev.py `ensure_docker`); these helpers only use it. No registry outside is reachable, so the
image is built here: this machine's own Python 3 (interpreter, standard library, the shared libraries
they load), `docker import`ed, pushed to a registry on 127.0.0.1 that lives for the test session, and
removed locally again, so that `docker run REPO@sha256:DIGEST` pulls it by digest as a runner would.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

HINT = ("run `python3 dev.py test` (as root it installs docker.io and docker-registry and starts dockerd), or "
        "start dockerd yourself")


class DockerUnavailable(Exception):
    pass


def docker(*argv: str, timeout: float = 120, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *argv], capture_output=True, timeout=timeout, input=input)


def check_daemon() -> str:
    """The daemon's version; DockerUnavailable when no daemon answers."""
    if shutil.which("docker") is None:
        raise DockerUnavailable(f"the docker client is missing; {HINT}")
    res = docker("version", "--format", "{{.Server.Version}}", timeout=30)
    if res.returncode != 0:
        raise DockerUnavailable(f"no Docker daemon answers ({res.stderr.decode(errors='replace').strip()[:300]}); "
                                f"{HINT}")
    return res.stdout.decode().strip()


def _libraries(binary: str) -> set[str]:
    res = subprocess.run(["ldd", binary], capture_output=True, text=True)
    return set(re.findall(r"(/\S+\.so[\d.]*)", res.stdout))


def python_rootfs() -> bytes:
    """A tar of a root filesystem holding this machine's /usr/bin/python3 and its standard library."""
    python = os.path.realpath("/usr/bin/python3")
    stdlib = sysconfig.get_paths(vars={"installed_base": "/usr", "base": "/usr"})["stdlib"]
    if not Path(python).exists() or not Path(stdlib).is_dir():
        raise DockerUnavailable(f"no system Python to build the test image from ({python}, {stdlib})")
    libs = _libraries(python)
    dynload = Path(stdlib) / "lib-dynload"
    for so in dynload.glob("*.so") if dynload.is_dir() else []:
        libs |= _libraries(str(so))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def add(path: str) -> None:
            tar.add(os.path.realpath(path), arcname=path.lstrip("/"), recursive=True,
                    filter=lambda t: None if t.name.endswith("__pycache__") or "/test/" in f"/{t.name}/" else t)

        for d in ("tmp", "etc", "proc", "sys", "dev"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        add(python)
        link = tarfile.TarInfo("usr/bin/python3")
        link.type, link.linkname = tarfile.SYMTYPE, os.path.basename(python)
        tar.addfile(link)
        add(stdlib)
        for lib in sorted(libs):
            add(lib)
    return buf.getvalue()


@dataclass
class Registry:
    """Debian's docker-registry on a free port of 127.0.0.1 (docker trusts a loopback registry over HTTP)."""
    port: int
    root: Path
    proc: subprocess.Popen

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        shutil.rmtree(self.root, ignore_errors=True)


def start_registry(port: int) -> Registry:
    binary = shutil.which("docker-registry") or "/usr/bin/docker-registry"
    if not Path(binary).exists():
        raise DockerUnavailable(f"docker-registry is missing; {HINT}")
    root = Path(tempfile.mkdtemp(prefix="cit-registry-"))
    (root / "config.yml").write_text(f"version: 0.1\nlog: {{level: warn}}\nstorage:\n  filesystem:\n"
                                     f"    rootdirectory: {root}/data\nhttp:\n  addr: 127.0.0.1:{port}\n")
    with (root / "registry.log").open("ab") as log:
        proc = subprocess.Popen([binary, "serve", str(root / "config.yml")], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    reg = Registry(port, root, proc)
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(f"http://{reg.host}/v2/", timeout=2).status_code == 200:
                return reg
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            text = (root / "registry.log").read_text(errors="replace")[-800:]
            reg.stop()
            raise DockerUnavailable(f"docker-registry did not answer on {reg.host}: {text}")
        time.sleep(0.2)


def build_pinned_image(registry: Registry, name: str = "cit-stub") -> str:
    """Import the Python root filesystem, push it, drop it locally: returns `HOST/NAME@sha256:DIGEST`."""
    tag = f"{registry.host}/{name}:1"
    steps = [("import", ["import", "-", tag], python_rootfs()), ("push", ["push", tag], None)]
    for what, argv, data in steps:
        res = docker(*argv, input=data, timeout=300)
        if res.returncode != 0:
            raise DockerUnavailable(f"docker {what} failed: {res.stderr.decode(errors='replace').strip()[:400]}")
    m = re.search(r"digest: (sha256:[0-9a-f]{64})", res.stdout.decode())
    if not m:
        raise DockerUnavailable(f"docker push printed no digest: {res.stdout.decode()[-300:]}")
    docker("rmi", tag)
    return f"{registry.host}/{name}@{m.group(1)}"


def remove_image(ref: str) -> None:
    docker("rmi", "-f", ref)


if __name__ == "__main__":   # python3 docker_host.py: build the image once by hand and print its reference
    from runner_support import free_port

    print(check_daemon())
    reg = start_registry(free_port())
    try:
        print(build_pinned_image(reg))
    finally:
        reg.stop()
    sys.exit(0)
