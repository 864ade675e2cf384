import subprocess
import sys

from ci_tools import __version__


def test_version_and_help_run_as_module():
    out = subprocess.run([sys.executable, "-m", "ci_tools", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.strip() == f"ci-tools, version {__version__}"
    out = subprocess.run([sys.executable, "-m", "ci_tools", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "Commands" in out.stdout or "Usage" in out.stdout


def test_unknown_command_is_usage_error():
    out = subprocess.run([sys.executable, "-m", "ci_tools", "no-such-command"], capture_output=True, text=True)
    assert out.returncode == 2
    assert "No such command" in out.stderr
    assert "Traceback" not in out.stderr


def test_ctx_exit_code_reaches_the_shell():
    import click
    from ci_tools import cli as cli_mod

    @click.command()
    @click.pass_context
    def failing(ctx):
        ctx.exit(4)

    cli_mod.cli.add_command(failing, "failing-for-test")
    try:
        import pytest
        with pytest.raises(SystemExit) as info:
            cli_mod.main(["failing-for-test"])
        assert info.value.code == 4
    finally:
        cli_mod.cli.commands.pop("failing-for-test", None)
