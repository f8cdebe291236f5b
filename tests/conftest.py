import contextlib
import io
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def corpus_files(kind: str | None = None) -> list[tuple[Path, str]]:
    """(path, kind) for every corpus file listed in MANIFEST.tsv; empty when the corpus is absent."""
    manifest = CORPUS / "MANIFEST.tsv"
    if not manifest.exists():
        return []
    rows = []
    for line in manifest.read_text().splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) >= 5 and (kind is None or parts[4] == kind):
            rows.append((CORPUS / parts[0], parts[4]))
    return rows


@pytest.fixture
def corpus():
    if not (CORPUS / "MANIFEST.tsv").exists():
        pytest.skip("../shared/corpus is not available")
    return corpus_files()


def modules_after(argv: list[str], cwd) -> set[str]:
    """Every module `dsconfig ARGV` has imported when it finishes, run in a fresh interpreter."""
    probe = (
        "import sys\n"
        "from dsconfig.cli import main\n"
        f"sys.argv = ['dsconfig'] + {argv!r}\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES:' + ' '.join(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, env=env)
    marked = [line for line in result.stdout.splitlines() if line.startswith("MODULES:")]
    assert result.returncode == 0 and marked, result.stderr
    return set(marked[-1][len("MODULES:"):].split())


@contextlib.contextmanager
def quiet_and_restored(env: dict | None = None):
    """Run the real libraries quietly (they log, warn and print a lot) and leave the environment as it
    was: `env`, when given, replaces it meanwhile; torchrun's OMP_NUM_THREADS never leaks in."""
    saved = dict(os.environ)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    os.environ.pop("OMP_NUM_THREADS", None)
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)
        os.environ.clear()
        os.environ.update(saved)
