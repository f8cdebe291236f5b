"""What dsconfig writes besides --fix and generate (tests/test_fix.py, tests/generate/test_generate_write.py):
`lint -o FILE` (`-` is standard output; a device or FIFO is written into, anything else that is not a
regular file is refused), and the shared atomic writer under all three."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import threading

import pytest
from click.testing import CliRunner

from dsconfig.commands.lint_cli import lint
from dsconfig.files import write_atomic
from tests.hostile_cases import DSCONFIG, environment

CONFIG = '{"train_batch_size": 7.0}\n'


def _lint(*args):
    return CliRunner().invoke(lint, list(args), catch_exceptions=False)


def test_output_file_is_never_overwritten_without_force(tmp_path):
    (tmp_path / "ds_config.json").write_text(CONFIG)
    report = tmp_path / "report.json"
    report.write_text("keep me")
    result = _lint(str(tmp_path / "ds_config.json"), "--format", "json", "-o", str(report))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"dsconfig: error: {report} exists; pass --force to overwrite it"
    assert report.read_text() == "keep me"


def test_force_replaces_the_output_file_keeping_its_mode(tmp_path):
    (tmp_path / "ds_config.json").write_text(CONFIG)
    report = tmp_path / "report.json"
    report.write_text("old")
    os.chmod(report, 0o600)
    result = _lint(str(tmp_path / "ds_config.json"), "--format", "json", "-o", str(report), "--force")
    assert result.exit_code == 1
    assert '"code": "DS201"' in report.read_text()
    assert stat.S_IMODE(report.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds_config.json", "report.json"]


def test_output_file_through_a_symlink_is_refused(tmp_path):
    (tmp_path / "ds_config.json").write_text(CONFIG)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("precious")
    (tmp_path / "report.json").symlink_to(elsewhere)
    result = _lint(str(tmp_path / "ds_config.json"), "-o", str(tmp_path / "report.json"), "--force")
    assert result.exit_code == 2
    assert "symbolic link" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert elsewhere.read_text() == "precious" and (tmp_path / "report.json").is_symlink()


def test_new_files_get_the_umask_mode(tmp_path):
    mask = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "new.json"), "{}\n")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "ds_config.json"
    target.write_text(CONFIG)

    def disk_full(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError):
        write_atomic(str(target), '{"train_batch_size": 7}\n')
    assert target.read_text() == CONFIG
    assert [p.name for p in tmp_path.iterdir()] == ["ds_config.json"]


# -- what -o may name besides a regular file ---------------------------------------------------------------


def test_dash_is_standard_output(tmp_path, monkeypatch):
    (tmp_path / "ds_config.json").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    result = _lint("ds_config.json", "--format", "json", "-o", "-")
    assert result.exit_code == 1 and '"code": "DS201"' in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds_config.json"]  # no file named `-`


@pytest.mark.skipif(not os.path.exists("/dev/null") or not stat.S_ISCHR(os.stat("/dev/null").st_mode),
                    reason="needs /dev/null")
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_dev_null_is_written_into_and_never_replaced(tmp_path, force):
    (tmp_path / "ds_config.json").write_text(CONFIG)
    before = os.stat("/dev/null")
    result = _lint(str(tmp_path / "ds_config.json"), "--format", "json", "-o", "/dev/null", *force)
    assert result.exit_code == 1 and result.stdout == "" and result.stderr == ""
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_fifo_is_written_into_and_stays_a_fifo(tmp_path, force):
    (tmp_path / "ds_config.json").write_text(CONFIG)
    fifo = tmp_path / "findings.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    result = _lint(str(tmp_path / "ds_config.json"), "--format", "json", "-o", str(fifo), *force)
    reader.join(timeout=60)
    assert result.exit_code == 1
    assert '"code": "DS201"' in received[0]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def _socket(path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return server


@pytest.mark.parametrize("kind, made", [("a folder", lambda path: path.mkdir()),
                                        ("a socket", _socket)])
def test_what_is_not_a_regular_file_is_never_replaced(tmp_path, kind, made):
    (tmp_path / "ds_config.json").write_text(CONFIG)
    target = tmp_path / "report.json"
    kept = made(target)
    before = os.lstat(target)
    result = _lint(str(tmp_path / "ds_config.json"), "-o", str(target), "--force")
    assert result.exit_code == 2
    assert result.stderr == f"dsconfig: error: {target}: {kind}, not a regular file; not replaced\n"
    after = os.lstat(target)
    assert (after.st_ino, stat.S_IFMT(after.st_mode)) == (before.st_ino, stat.S_IFMT(before.st_mode))
    if kept is not None:
        kept.close()


@pytest.mark.parametrize("kind", ["fifo", "socket", "folder"])
def test_write_atomic_replaces_only_a_regular_file(tmp_path, kind):
    """The writer under --fix, generate and -o: even asked directly, it never replaces anything else."""
    target = tmp_path / "ds_config.json"
    kept = None
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        kept = _socket(target)
    else:
        target.mkdir()
    mode = os.lstat(target).st_mode
    with pytest.raises(OSError, match="not a regular file; not replaced"):
        write_atomic(str(target), "{}\n")
    assert os.lstat(target).st_mode == mode
    assert [p.name for p in tmp_path.iterdir()] == ["ds_config.json"]  # no temporary left behind
    if kept is not None:
        kept.close()


def test_dev_stdout_is_standard_output_even_when_that_is_a_file(tmp_path):
    (tmp_path / "ds_config.json").write_text(CONFIG)
    captured = tmp_path / "captured.json"
    with open(captured, "wb") as stdout:
        result = subprocess.run([*DSCONFIG, "lint", "ds_config.json", "--format", "json", "-o", "/dev/stdout"],
                                cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE, env=environment(), timeout=120,
                                check=False)
    assert result.returncode == 1 and result.stderr == b""
    assert json.loads(captured.read_text())[0]["file"] == "ds_config.json"


@pytest.mark.skipif(not os.path.exists("/dev/null") or not stat.S_ISCHR(os.stat("/dev/null").st_mode),
                    reason="needs /dev/null")
def test_a_link_to_a_device_is_not_followed(tmp_path):
    """A link checked out with the repository (`report.sarif -> /dev/mem`) is never written through;
    /dev/null stands in for the device here."""
    (tmp_path / "ds_config.json").write_text(CONFIG)
    (tmp_path / "report.sarif").symlink_to("/dev/null")
    result = _lint(str(tmp_path / "ds_config.json"), "-o", str(tmp_path / "report.sarif"), "--force")
    assert result.exit_code == 2
    assert result.stderr == f"dsconfig: error: {tmp_path / 'report.sarif'}: a symbolic link; not written through\n"
