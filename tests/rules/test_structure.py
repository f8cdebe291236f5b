"""The package's shape (scripts/check_structure.py): each rule code declared in one module under
dsconfig/rules/, no import cycle among dsconfig modules (imports inside functions included)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import check_structure  # noqa: E402

from dsconfig.rules import RULES  # noqa: E402


def test_the_structure_check_passes():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_structure.py")], capture_output=True,
                            text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"ok: {len(RULES)} rule codes")


def test_cycles_are_found():
    """The cycle finder itself: a three-module loop and a self-contained chain."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert check_structure.cycles(graph) == [["a", "b", "c"]]
    assert check_structure.cycles({"a": {"b"}, "b": set()}) == []


def test_function_level_imports_count(tmp_path, monkeypatch):
    """An import inside a function is an edge, as is `from package import module`."""
    package = tmp_path / "dsconfig"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text("def f():\n    from .sub import two\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "two.py").write_text("from .. import one\n")
    monkeypatch.setattr(check_structure, "ROOT", tmp_path)
    monkeypatch.setattr(check_structure, "PACKAGE", package)
    graph = check_structure.imports(check_structure.modules())
    assert graph["dsconfig.one"] == {"dsconfig.sub.two"} and graph["dsconfig.sub.two"] == {"dsconfig.one"}
    assert check_structure.cycles(graph) == [["dsconfig.one", "dsconfig.sub.two"]]


def test_a_code_declared_twice_is_reported(tmp_path, monkeypatch):
    package = tmp_path / "dsconfig"
    (package / "rules").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "rules" / "__init__.py").write_text("")
    (package / "rules" / "a.py").write_text('X = ("DS001",)\n')
    (package / "rules" / "b.py").write_text('Y = ("DS001", "DS002")\n')
    monkeypatch.setattr(check_structure, "ROOT", tmp_path)
    monkeypatch.setattr(check_structure, "PACKAGE", package)
    assert check_structure.problems() == ["DS001 is declared in 2 modules: dsconfig.rules.a, dsconfig.rules.b"]


def test_a_file_opened_outside_the_readers_is_reported(tmp_path, monkeypatch):
    """Every file of the user's is read through dsconfig.files (and so the reading boundary): a module that opens
    one itself, however it spells it, is reported; dsconfig's own functions named like a path's are not."""
    package = tmp_path / "dsconfig"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "files.py").write_text("def read_bytes(path):\n    return open(path, 'rb').read()\n")
    (package / "sneaky.py").write_text(
        "import io, os\nfrom pathlib import Path\n"
        "def a(p):\n    return open(p).read()\n"
        "def b(p):\n    return Path(p).read_text()\n"
        "def c(p):\n    return os.open(p, os.O_RDONLY)\n"
        "def d(p):\n    return io.open(p)\n"
        "def e(p):\n    with Path(p).open('rb') as handle:\n        return handle.read()\n")
    (package / "fine.py").write_text(
        "from . import files\n"
        "def a(p):\n    return files.read_bytes(p)\n"
        "def b(doc, p):\n    return doc.read_text(p, 10)\n")
    monkeypatch.setattr(check_structure, "ROOT", tmp_path)
    monkeypatch.setattr(check_structure, "PACKAGE", package)
    found = check_structure.file_openings(check_structure.modules())
    assert [line.split(":")[:2] for line in found] == [["dsconfig.sneaky", str(n)] for n in (4, 6, 8, 10, 12)]
