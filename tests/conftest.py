"""Shared test helpers.

The corpus of real-world configs comes from two places (`corpus_files`):

* tests/fixtures/corpus/: configs written for this project in the shapes real users write (see
  tests/fixtures/README.md). Always there, so the corpus tests run on a clean clone and in CI.
* ../shared/corpus/: the research corpus of real config files from public repositories, next to
  the repository when it is there (not part of it).

Both have a MANIFEST.tsv (file, repo, path, commit, kind). Set DSCONFIG_NO_SHARED_CORPUS=1 to
ignore ../shared/corpus even when it exists, i.e. to run the tests as a clean clone would.
"""

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
SHARED_CORPUS = ROOT.parent / "shared" / "corpus"
LOCAL_CORPUS = ROOT / "tests" / "fixtures" / "corpus"
CORPUS = SHARED_CORPUS  # the name the tests used for ../shared/corpus
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# the tests that run `python -m dsconfig` in a scratch folder must run this checkout, not an installed one
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
# DeepSpeed's ops that the engine oracles JIT-compile (cpu_adam, ...) are built into the checkout, not the user's
# ~/.cache: a build killed midway leaves its lock file, and every later build of that op, in any run that shares
# the folder, waits on it for ever. A clean clone starts with none; stale locks are cleared below.
TORCH_EXTENSIONS = ROOT / ".cache" / "torch-extensions"
os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(TORCH_EXTENSIONS))
STALE_LOCK_SECONDS = 1800  # one op builds in minutes; a lock this old belongs to a build that was killed
# every run a test makes is a full run: the result cache (dsconfig/cache.py) is tested on its own, with its own
# folder (tests/test_cache.py), and never replays one test's output into another
os.environ["DSCONFIG_NO_CACHE"] = "1"


def shared_corpus_available() -> bool:
    """../shared/corpus is there and DSCONFIG_NO_SHARED_CORPUS does not hide it."""
    return not os.environ.get("DSCONFIG_NO_SHARED_CORPUS") and (SHARED_CORPUS / "MANIFEST.tsv").is_file()


def _manifest_rows(folder: Path, kind: str | None) -> list[tuple[Path, str]]:
    rows = []
    for line in (folder / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) >= 5 and (kind is None or parts[4] == kind):
            rows.append((folder / parts[0], parts[4]))
    return rows


def corpus_files(kind: str | None = None, source: str = "all") -> list[tuple[Path, str]]:
    """(path, kind) for every corpus file listed in a MANIFEST.tsv, `kind` ("deepspeed",
    "accelerate", "other") or all. `source`: "all" (the shared corpus when available, plus the
    project's fixtures, always), "shared" (only ../shared/corpus; empty when unavailable) or
    "local" (only tests/fixtures/corpus)."""
    if source not in ("all", "shared", "local"):
        raise ValueError(f"source must be 'all', 'shared' or 'local', not {source!r}")
    rows = []
    if source in ("all", "shared") and shared_corpus_available():
        rows += _manifest_rows(SHARED_CORPUS, kind)
    if source in ("all", "local"):
        rows += _manifest_rows(LOCAL_CORPUS, kind)
    return rows


# Slow oracle runs parametrized over many releases or models are sampled: each run keeps SLOW_SAMPLE of each
# such test's cases, chosen by a seed that changes daily (so successive CI runs cover them all) and is printed
# in the header so that a failure can be rerun. DSCONFIG_SLOW=all runs every case; DSCONFIG_SLOW_SEED fixes it.
SLOW_SAMPLE = 4


def slow_seed() -> int:
    import datetime
    return int(os.environ.get("DSCONFIG_SLOW_SEED") or datetime.date.today().toordinal())


def slow_sample(cases: list, seed: int | None = None, keep: int = SLOW_SAMPLE) -> list:
    """`keep` of `cases` (all under DSCONFIG_SLOW=all), the same for the same seed in every process."""
    import random
    if os.environ.get("DSCONFIG_SLOW") == "all" or len(cases) <= keep:
        return list(cases)
    chosen = set(random.Random(slow_seed() if seed is None else seed).sample(range(len(cases)), keep))
    return [case for index, case in enumerate(cases) if index in chosen]


def pytest_configure(config):
    # one seed for the whole run: pytest-xdist's workers inherit it, so they collect the same cases
    os.environ.setdefault("DSCONFIG_SLOW_SEED", str(slow_seed()))
    if not hasattr(config, "workerinput"):  # once per run, before any worker builds
        _clear_stale_build_locks(Path(os.environ["TORCH_EXTENSIONS_DIR"]))


def _clear_stale_build_locks(folder: Path) -> None:
    import time
    for lock in [*folder.glob("*/lock"), *folder.glob("*/*/lock")]:  # TORCH_EXTENSIONS_DIR/op, or py311_cpu/op
        with contextlib.suppress(OSError):
            if time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
                lock.unlink()


def pytest_report_header(config):
    if os.environ.get("DSCONFIG_SLOW") == "all":
        return "dsconfig: every slow oracle case (DSCONFIG_SLOW=all)"
    return (f"dsconfig: {SLOW_SAMPLE} cases of each parametrized slow test, seed {slow_seed()} "
            "(DSCONFIG_SLOW_SEED=N to repeat, DSCONFIG_SLOW=all for every case)")


def pytest_collection_modifyitems(config, items):
    groups: dict[str, list] = {}
    for item in items:
        if item.get_closest_marker("slow") and getattr(item, "callspec", None) is not None:
            groups.setdefault(item.nodeid.split("[", 1)[0], []).append(item)
    dropped = []
    for name, cases in groups.items():
        kept = slow_sample(cases, seed=slow_seed() + sum(map(ord, name)))
        dropped += [case for case in cases if case not in kept]
    if dropped:
        gone = set(map(id, dropped))
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if id(item) not in gone]


@pytest.fixture(autouse=True)
def _newest_deepspeed_release_afterwards():
    """A test that lints for an older DeepSpeed release leaves the schema lookups answering for it; the
    next test starts from the newest again, as a fresh `dsconfig` process does."""
    yield
    from dsconfig.deepspeed import releases, schema
    schema.use(releases.NEWEST)


@pytest.fixture(autouse=True, scope="session")
def _temporary_files_stay_under_pytest(tmp_path_factory):
    """The oracles leave files in the system's temporary folder: torchrun's DefaultLogsSpecs makes a
    /tmp/torchelastic_* folder each time Accelerate builds a multi-GPU launch environment, and never
    removes it (about 1,400 per run). Keep everything under pytest's temporary folder, which it prunes."""
    import tempfile
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("tmp"))
    try:
        yield
    finally:
        tempfile.tempdir = saved


@pytest.fixture
def corpus():
    """Every corpus file: the project's fixtures, plus ../shared/corpus when available."""
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
