"""test_main.py - the ringfeed command from the package (issue 38, item 2):
`python -m ringfeed` runs the C command (here the build folder's, as a
wheel's ringfeed/_bin/ringfeed: tests/wheel_install.sh), its exit status
passed on, and says clearly when the command is missing."""

import os
import subprocess
import sys

import ringfeed
import ringfeed.__main__ as main


def run(*args):
    return subprocess.run([sys.executable, "-m", "ringfeed", *args], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ))


def test_version_is_the_packages():
    r = run("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"ringfeed {ringfeed.__version__}"), r.stdout


def test_the_commands_exit_status_is_passed_on():
    r = run("no-such-command")
    assert r.returncode == 2
    assert "unknown command 'no-such-command'" in r.stderr


def test_the_command_found_is_an_executable_elf_file():
    path = main.command()
    assert path is not None
    with open(path, "rb") as f:
        assert f.read(4) == b"\x7fELF"


def test_a_missing_command_says_so(monkeypatch, capsys):
    monkeypatch.setattr(main, "_candidates", lambda: iter(()))
    assert main.main(["--version"]) == 127
    err = capsys.readouterr().err
    assert "the ringfeed command is missing" in err and "_bin" in err


def test_a_script_on_path_is_not_taken_for_the_command(tmp_path, monkeypatch):
    """pip's console script `ringfeed` runs this module: found on PATH, it
    would run itself for ever."""
    script = tmp_path / "ringfeed"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    assert not main._is_command(str(script))
