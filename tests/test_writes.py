"""What dsconfig writes besides --fix and generate (tests/test_fix.py, tests/generate/test_generate_write.py):
`lint -o FILE`, and the shared atomic writer under all three."""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

from dsconfig.commands.lint import lint
from dsconfig.files import write_atomic

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
