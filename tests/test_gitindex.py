"""dsconfig.gitindex against git itself: the paths read from `.git/index` are those `git ls-files` lists, for
every index version and both object formats; a walk lints what git tracks, whatever a .gitignore says."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig import engine, gitindex

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
       "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(folder, *args) -> str:
    return subprocess.run(["git", *args], cwd=folder, env=ENV, check=True, capture_output=True).stdout.decode()


def ls_files(folder) -> set[str]:
    return {os.fsdecode(p) for p in subprocess.run(["git", "ls-files", "-z"], cwd=folder, env=ENV, check=True,
                                                   capture_output=True).stdout.split(b"\0") if p}


def repository(folder, paths, object_format="sha1", version=2, intent=()):
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q", f"--object-format={object_format}", ".")
    for path in list(paths) + list(intent):
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path)
    if paths:
        git(folder, "add", "-f", "--", *paths)
    if intent:
        git(folder, "add", "-N", "-f", "--", *intent)
    git(folder, "update-index", "--index-version", str(version))
    return folder


NAME = st.text(alphabet=st.sampled_from("abcxyz_-. éü漢0"), min_size=1, max_size=12).filter(
    lambda n: n not in (".", "..") and not n.startswith(".git") and n.strip() == n)
PATH = st.lists(NAME, min_size=1, max_size=4).map("/".join)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(paths=st.lists(PATH, min_size=1, max_size=12, unique=True), version=st.sampled_from([2, 3, 4]),
       intent=st.booleans())
def test_the_index_lists_what_git_ls_files_lists(tmp_path_factory, paths, version, intent):
    # a path cannot be both a file and a folder
    paths = [p for p in paths if not any(other.startswith(p + "/") for other in paths)]
    extra = ("new/intent-to-add.json",) if intent else ()  # an extended flag in versions 3 and 4
    folder = repository(tmp_path_factory.mktemp("repo"), paths, version=version, intent=extra)
    with open(folder / ".git" / "index", "rb") as handle:
        assert gitindex.parse(handle.read()) == ls_files(folder)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_sha256_repositories_and_long_names(tmp_path, version):
    long_name = "/".join(["d" * 200] * 6) + ".json"  # 1,200 bytes of path in one entry
    try:
        folder = repository(tmp_path / "r", ["a.json", long_name, "x/y/z.yaml"], object_format="sha256",
                            version=version)
    except subprocess.CalledProcessError:
        pytest.skip("this git cannot make a SHA-256 repository")
    with open(folder / ".git" / "index", "rb") as handle:
        assert gitindex.parse(handle.read()) == ls_files(folder) == {"a.json", long_name, "x/y/z.yaml"}


def test_what_is_no_index_is_none(tmp_path):
    folder = repository(tmp_path / "r", ["a.json", "b/c.json"])
    data = (folder / ".git" / "index").read_bytes()
    assert gitindex.parse(data) == {"a.json", "b/c.json"}
    for broken in (b"", b"DIRC", data[:40], data[:-25], b"XXXX" + data[4:], data[:4] + b"\0\0\0\x09" + data[8:]):
        assert gitindex.parse(broken) is None


def test_a_walk_lints_what_git_tracks_under_an_ignored_folder(tmp_path, monkeypatch):
    folder = repository(tmp_path / "r", ["configs/ds_config.json"])
    (folder / ".gitignore").write_text("configs/\noutputs/\n*.local.json\n")
    (folder / "configs" / "ds_config.json").write_text('{"train_batch_size": 7.0}')  # tracked: linted
    (folder / "configs" / "ds_config_mine.json").write_text('{"train_batch_size": 7.0}')  # untracked: skipped
    (folder / "outputs").mkdir()
    (folder / "outputs" / "ds_config.json").write_text('{"train_batch_size": 7.0}')  # ignored folder: skipped
    (folder / "ds_config.local.json").write_text('{"train_batch_size": 7.0}')  # ignored file: skipped
    monkeypatch.chdir(folder)
    collection = engine.collect(["."])
    assert collection.files == ["./configs/ds_config.json"]
    assert collection.gitignored == 2  # the two untracked configs in folders the walk entered
    glob = engine.collect(["**/*.json"])
    assert glob.files == ["configs/ds_config.json"]
    from click.testing import CliRunner

    from dsconfig.cli import cli
    result = CliRunner().invoke(cli, ["lint", "--no-config", "."])
    assert result.exit_code == 1 and "./configs/ds_config.json:1:22: error DS201" in result.stdout
    assert "2 untracked .json/.yaml/.toml files that git ignore not linted (--no-respect-gitignore lints them)" \
        in result.stderr
    # without the index (a tarball of the project), the .gitignore alone decides, as before: nothing to lint
    os.remove(folder / ".git" / "index")
    with pytest.raises(engine.UsageError):
        engine.collect(["."])
