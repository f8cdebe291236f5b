"""Reading the user's files (dsconfig/files.py): memory follows what a file holds, never the limit."""

from __future__ import annotations

import io
import tracemalloc

import pytest

from dsconfig import files
from dsconfig.files import CHUNK, TooLarge, parse_file_size, read_bytes, read_stream

CONFIG = b'{"train_micro_batch_size_per_gpu": 4}\n'


class Endless(io.RawIOBase):
    """A pipe that never ends (`yes | dsconfig lint -`), counting what was asked of it."""

    def __init__(self):
        self.sizes: list[int] = []

    def read(self, size=-1):
        assert size is not None and size >= 0, "an unbounded read of an endless stream never returns"
        self.sizes.append(size)
        return b"x" * size


def _peak(function) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_30_gib_limit_reads_a_small_file_in_small_memory(tmp_path):
    # read(limit + 1) asked for the whole 30 GiB buffer up front: MemoryError before a byte was read
    path = tmp_path / "ds_config.json"
    path.write_bytes(CONFIG)
    assert read_bytes(str(path), 30 << 30) == CONFIG
    assert _peak(lambda: read_bytes(str(path), 30 << 30)) < 4 * CHUNK


def test_a_30_gib_limit_reads_standard_input_in_small_memory():
    assert read_stream(io.BytesIO(CONFIG), "-", 30 << 30) == CONFIG
    assert _peak(lambda: read_stream(io.BytesIO(CONFIG), "-", 30 << 30)) < 4 * CHUNK


def test_an_endless_stream_is_read_one_byte_past_the_limit_in_chunks():
    stream = Endless()
    with pytest.raises(TooLarge, match="-: is larger than 200 KiB"):
        read_stream(stream, "-", 200 << 10)
    assert sum(stream.sizes) == (200 << 10) + 1
    assert max(stream.sizes) == CHUNK


@pytest.mark.parametrize("size", [1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK])
def test_the_limit_is_exact_at_chunk_boundaries(tmp_path, size):
    path = tmp_path / "ds_config.json"
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    path.write_bytes(data)
    assert read_bytes(str(path), size) == data
    with pytest.raises(TooLarge) as raised:
        read_bytes(str(path), size - 1) if size > 1 else read_bytes(str(path), 0)
    assert raised.value.size == size


def test_the_default_limit_still_stops_a_large_file(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_bytes(b" " * (files.MAX_BYTES + 10))
    with pytest.raises(TooLarge, match=r"ds_config.json: is 256 KiB, more than any config holds"):
        read_bytes(str(path))


def test_a_size_no_float_holds_is_refused():
    with pytest.raises(ValueError, match="larger than any file"):
        parse_file_size("9" * 400 + "G")
    assert parse_file_size("30G") == 30 << 30


def test_lint_refuses_such_a_size_as_a_usage_error(tmp_path):
    from click.testing import CliRunner

    from dsconfig.commands.lint_cli import lint

    (tmp_path / "ds_config.json").write_bytes(CONFIG)
    result = CliRunner().invoke(lint, [str(tmp_path / "ds_config.json"), "--max-file-size", "9" * 400 + "G"])
    assert result.exit_code == 2, result.exception  # click's usage error, not an OverflowError
    assert "--max-file-size" in result.output and "larger than any file" in result.output


@pytest.mark.parametrize("name,says", [
    (".gitignore", ("dsconfig: error: ./.gitignore: is 30 GiB, more than any config holds; not read (the limit is "
                    "256 KiB)")),
    (".dsconfig.toml", ("dsconfig: error: .dsconfig.toml: is larger than 256 KiB, more than any configuration file "
                        "holds; not read")),
])
def test_the_files_lint_finds_itself_are_bounded_too(tmp_path, monkeypatch, name, says):
    # read() sizes its buffer from st_size: a sparse 30 GiB .gitignore or settings file was a MemoryError
    from click.testing import CliRunner

    from dsconfig.commands.lint_cli import lint

    (tmp_path / "ds_config.json").write_bytes(CONFIG)
    with open(tmp_path / name, "wb") as handle:
        handle.truncate(30 << 30)  # sparse: no disk space used
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(lint, ["."])
    assert result.exit_code == 2 and result.stderr == says + "\n", result.output


def test_a_pyproject_past_the_limit_is_skipped_unless_it_has_the_table(tmp_path, monkeypatch):
    from dsconfig import settings

    (tmp_path / ".git").mkdir()
    with open(tmp_path / "pyproject.toml", "wb") as handle:
        handle.truncate(30 << 30)
    monkeypatch.chdir(tmp_path)
    assert settings.discover() is None  # no [tool.dsconfig] in its first 256 KiB: not dsconfig's file
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.dsconfig]\n" + b" " * files.MAX_BYTES)
    assert settings.discover() == str(tmp_path / "pyproject.toml")
    with pytest.raises(settings.ConfigError, match="pyproject.toml: is larger than 256 KiB"):
        settings.resolve()
