"""dsconfig --deepspeed-version V vs the real DeepSpeed V, for releases side by side (tests/releases.py):
V rejects a config while loading or parsing it exactly when dsconfig, replaying V, reports an error whose
`fails_in` is "load" or "parse".

The same two populations as test_differential.py (which covers the installed 0.19.8): every DeepSpeed
config of the corpus at world sizes 1, 2, 4 and 8, and hypothesis-generated configs, here against each
release of tests.releases.DIFFERENTIAL. Per-release agreement is printed (run with -s). A release that
cannot be fetched (no network) is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings

from dsconfig.deepspeed import releases as ds_releases
from tests import releases
from tests.deepspeed.test_differential import CORPUS, WORLD_SIZES, configs_at
from tests.helpers import lint

AGREEMENT: Counter = Counter()


def oracle(version: str):
    release = releases.release(version)
    if release is None:
        pytest.skip(f"DeepSpeed {version} could not be fetched (pip download failed)")
    return release


def dsconfig_rejects(path, world_size: int, version: str) -> list:
    findings = lint(str(path), target="deepspeed", world_sizes=(world_size,), kind="deepspeed",
                    deepspeed_version=version)
    return [f for f in findings if f.severity == "error" and f.fails_in in ("load", "parse")]


@pytest.mark.parametrize("version", releases.DIFFERENTIAL)
def test_corpus_agrees_with_each_release(version, capsys):
    release = oracle(version)
    disagreements, total, rejected = [], 0, 0
    for path in CORPUS:
        for size in WORLD_SIZES:
            truth = release.verdict(path, size)
            fatal = dsconfig_rejects(path, size, version)
            total += 1
            rejected += not truth["ok"]
            if bool(fatal) == truth["ok"]:
                disagreements.append((path.name, size, truth["error"], [(f.code, f.message) for f in fatal]))
    with capsys.disabled():
        print(f"\nDeepSpeed {version}, corpus: {total - len(disagreements)}/{total} verdicts agree "
              f"(it rejects {rejected})")
    assert not disagreements, "\n".join(map(str, disagreements[:20]))


@settings(max_examples=int(os.environ.get("DSCONFIG_RELEASE_EXAMPLES", "400")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=configs_at())
def test_generated_configs_agree_with_each_release(tmp_path, case):
    config, world_size = case
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(config, indent=2))
    for version in releases.DIFFERENTIAL:
        truth = oracle(version).verdict(path, world_size)
        fatal = dsconfig_rejects(path, world_size, version)
        AGREEMENT[version, "total"] += 1
        AGREEMENT[version, "agree"] += bool(fatal) != truth["ok"]
        assert bool(fatal) != truth["ok"], \
            f"DeepSpeed {version}, world {world_size}\n{path.read_text()}\nDeepSpeed: {truth['error']}\ndsconfig: {fatal}"


def test_zz_report_generated_agreement(capsys):
    with capsys.disabled():
        for version in releases.DIFFERENTIAL:
            if AGREEMENT[version, "total"]:
                print(f"\nDeepSpeed {version}, generated: {AGREEMENT[version, 'agree']}/"
                      f"{AGREEMENT[version, 'total']} verdicts agree")


def test_the_releases_tested_span_the_supported_range():
    assert releases.DIFFERENTIAL[0] == ds_releases.SUPPORTED[0]
    assert len(set(releases.DIFFERENTIAL)) >= 6
    assert set(releases.DIFFERENTIAL) <= set(ds_releases.SUPPORTED)


@pytest.mark.slow
def test_the_release_data_is_what_the_releases_say(tmp_path):
    """schemas/deepspeed-releases.json regenerated from every supported release equals the committed one
    (under DSCONFIG_SLOW=all; otherwise a sample of releases' entries are what those releases say)."""
    from tests.conftest import slow_sample
    sample = slow_sample(list(ds_releases.SUPPORTED))
    whole = len(sample) == len(ds_releases.SUPPORTED)
    missing = [v for v in {*sample, ds_releases.NEWEST} if releases.release_dir(v) is None]
    if missing:
        pytest.skip(f"could not fetch DeepSpeed {', '.join(missing)}")
    root = releases.ROOT
    done = subprocess.run([sys.executable, str(root / "scripts" / "build_releases.py"), str(releases.FOLDER),
                           "--check", *([] if whole else ["--only", *sample])],
                          capture_output=True, text=True, cwd=str(root))
    assert done.returncode == 0, done.stderr[-2000:]
