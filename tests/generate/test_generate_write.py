"""Writing: all or nothing, atomic, modes kept, no overwrite without force, no symlink out of the folder."""

from __future__ import annotations

import os
import stat

import pytest

from dsconfig.generate import write
from dsconfig.generate.render import File
from dsconfig.generate.write import WriteError, write_all

FILES = [File("ds_config.json", '{"a": 1}\n'), File("accelerate_config.yaml", "a: 1\n"),
         File("slurm.sbatch", "#!/bin/bash\n", executable=True)]


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_writes_every_file_with_the_umask(tmp_path, umask_022):
    out = tmp_path / "new" / "folder"
    written = write_all(str(out), FILES)
    assert written == [str(out / f.name) for f in FILES]
    assert (out / "ds_config.json").read_text() == '{"a": 1}\n'
    assert mode(out / "ds_config.json") == 0o644 and mode(out / "slurm.sbatch") == 0o755
    assert sorted(os.listdir(out)) == sorted(f.name for f in FILES)  # no temporary files left


def test_current_folder_names_are_bare(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert write_all(".", FILES[:1]) == ["ds_config.json"]


def test_refuses_to_overwrite_and_writes_nothing(tmp_path):
    (tmp_path / "accelerate_config.yaml").write_text("mine\n")
    with pytest.raises(WriteError, match=r"accelerate_config.yaml exists; pass --force"):
        write_all(str(tmp_path), FILES)
    assert not (tmp_path / "ds_config.json").exists()  # checked before anything was written
    assert (tmp_path / "accelerate_config.yaml").read_text() == "mine\n"


def test_force_overwrites_and_keeps_the_mode(tmp_path, umask_022):
    target = tmp_path / "ds_config.json"
    target.write_text("old\n")
    os.chmod(target, 0o600)
    write_all(str(tmp_path), FILES[:1], force=True)
    assert target.read_text() == '{"a": 1}\n' and mode(target) == 0o600


def test_symlink_inside_the_folder_is_written_through(tmp_path):
    real = tmp_path / "configs" / "real.json"
    real.parent.mkdir()
    real.write_text("old\n")
    os.chmod(real, 0o640)
    (tmp_path / "ds_config.json").symlink_to(real)
    with pytest.raises(WriteError, match="exists"):
        write_all(str(tmp_path), FILES[:1])
    write_all(str(tmp_path), FILES[:1], force=True)
    assert (tmp_path / "ds_config.json").is_symlink()
    assert real.read_text() == '{"a": 1}\n' and mode(real) == 0o640


def test_symlink_out_of_the_folder_is_refused(tmp_path):
    outside = tmp_path / "elsewhere.json"
    outside.write_text("precious\n")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "ds_config.json").symlink_to(outside)
    for force in (False, True):
        with pytest.raises(WriteError, match="symlink to .*outside"):
            write_all(str(folder), FILES, force=force)
    assert outside.read_text() == "precious\n"
    assert sorted(os.listdir(folder)) == ["ds_config.json"]


def test_relative_symlink_escaping_with_dotdot_is_refused(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (tmp_path / "victim").write_text("x\n")
    (folder / "ds_config.json").symlink_to("../victim")
    with pytest.raises(WriteError, match="outside"):
        write_all(str(folder), FILES[:1], force=True)


def test_dangling_link_counts_as_existing(tmp_path):
    (tmp_path / "ds_config.json").symlink_to(tmp_path / "missing.json")
    with pytest.raises(WriteError, match="exists"):
        write_all(str(tmp_path), FILES[:1])
    write_all(str(tmp_path), FILES[:1], force=True)
    assert (tmp_path / "missing.json").read_text() == '{"a": 1}\n'


def test_folder_in_the_way_and_output_dir_that_is_a_file(tmp_path):
    (tmp_path / "ds_config.json").mkdir()
    with pytest.raises(WriteError, match="is a folder"):
        write_all(str(tmp_path), FILES[:1], force=True)
    afile = tmp_path / "file"
    afile.write_text("")
    with pytest.raises(WriteError):
        write_all(str(afile), FILES[:1])


def test_a_failed_replace_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "ds_config.json"
    target.write_text("old\n")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write.os, "replace", fail)
    with pytest.raises(WriteError, match="No space left on device"):
        write_all(str(tmp_path), FILES[:1], force=True)
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["ds_config.json"]


def test_unwritable_folder(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    folder = tmp_path / "ro"
    folder.mkdir()
    os.chmod(folder, 0o500)
    try:
        with pytest.raises(WriteError, match="cannot write"):
            write_all(str(folder), FILES[:1])
    finally:
        os.chmod(folder, 0o700)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("through_a_link", [False, True])
def test_a_fifo_in_the_way_is_never_replaced_even_with_force(tmp_path, through_a_link):
    fifo = tmp_path / ("pipe" if through_a_link else "ds_config.json")
    os.mkfifo(fifo)
    if through_a_link:  # a link inside the folder is followed: to the FIFO, which is refused as well
        (tmp_path / "ds_config.json").symlink_to("pipe")
    with pytest.raises(WriteError, match=r"a FIFO \(named pipe\), not a regular file; not replaced"):
        write_all(str(tmp_path), FILES, force=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not (tmp_path / "accelerate_config.yaml").exists()  # checked before anything was written
