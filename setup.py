"""Build step of the ci-tools package: everything else is declared in pyproject.toml.

ci-tools' default sweep-label policy (what `ci-tools plan` uses for a repository without its own
inferencex-e2e/ci-policy.yaml) is this repository's own policy file. It is written into the built
package here, from that one file, so that nobody keeps a second copy in step by hand; a checkout or an
editable install reads the repository file directly (ci_tools/sweep/load.py).
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
POLICY = ROOT / "inferencex-e2e" / "ci-policy.yaml"
PACKAGED = Path("ci_tools") / "sweep" / "default-ci-policy.yaml"


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if not POLICY.is_file():
            raise SystemExit(f"{POLICY}: missing; the package's default policy is built from it "
                             "(MANIFEST.in includes it in the source distribution)")
        target = Path(self.build_lib) / PACKAGED
        target.parent.mkdir(parents=True, exist_ok=True)
        # the editor schema comment points at ci_tools/schemas/ from where the file now lives
        text = POLICY.read_text(encoding="utf-8").replace("$schema=../ci_tools/schemas/", "$schema=../schemas/", 1)
        target.write_text(text, encoding="utf-8")


setup(cmdclass={"build_py": BuildPy})
