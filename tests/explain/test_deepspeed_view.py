"""The last layer of `dsconfig explain`: the effective config against the real DeepSpeedConfig.

dsconfig.explain.deepspeed_view says what DeepSpeedConfig(config) holds, in ds_config.json key space:
every key, defaults included, for the release chosen. The real object holds it in its own attribute
names (zero_config, float16_config, data_efficiency_config, torch dtypes, ...), so the comparison goes
through DeepSpeed itself: the effective config, written out as a ds_config.json, must make DeepSpeed
hold exactly what the original config made it hold, attribute by attribute. A wrong default (0.19.2's
gradient_clipping 0.0 shown as 1.0), a dropped key DeepSpeed passes on, or a key it does not read
(pydantic sections refuse it) all change what it holds.

Two kinds of leaf cannot be written back and are left out: a null DeepSpeed put there (for DeepSpeed
an explicit null is not an absent key: `int(None)` for data_efficiency's max_batch_size) and a default
no JSON value can hold (tensor_parallel.dtype is a torch dtype). Where DeepSpeed rejects the config, the
view must say so.

Populations: every DeepSpeed JSON of the corpus at world sizes 1, 2 and 8, under the installed 0.19.8
and each release of tests.releases.DIFFERENTIAL (in its own process; every other supported release with
the slow tests), and hypothesis-generated configs under 0.19.8.
"""

from __future__ import annotations

import copy
import json
import os
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings

from dsconfig.deepspeed import schema
from dsconfig.deepspeed.releases import NEWEST, SUPPORTED
from dsconfig.explain.chain import _set_at, leaves, same
from dsconfig.explain.deepspeed_view import effective
from tests import releases
from tests.conftest import corpus_files
from tests.release_worker import held

oracle = pytest.importorskip("tests.oracle")

from deepspeed.runtime.config import DeepSpeedConfig  # noqa: E402

from tests.deepspeed.test_differential import configs_at  # noqa: E402

WORLDS = (1, 2, 8)
INSTALLED = "0.19.8"


def _corpus() -> list[tuple[str, dict]]:
    found = []
    for path, kind in corpus_files():
        if kind not in ("deepspeed", "other") or path.suffix != ".json":
            continue
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue  # DeepSpeed's hjson reads some of these; json.load, as everyone else, does not
        if isinstance(value, dict):
            found.append((f"{path.parent.name}/{path.name}", value))
    return found


CORPUS = _corpus()


def written_out(view) -> dict:
    """The effective config as a ds_config.json: every leaf but a null default or one JSON cannot hold."""
    out: dict = {}
    for pointer, value in leaves(view.config):
        defaulted = pointer in view.defaulted or any(pointer.startswith(p + "/") for p in view.defaulted)
        if value is None and (defaulted or pointer in view.derived or pointer.count("/") == 1):
            continue  # a section DeepSpeed builds only when written (optimizer, comms_logger): absent
        if defaulted and (schema.property_at(pointer) or {}).get("not") == {}:
            continue
        _set_at(out, pointer, copy.deepcopy(value))
    return out


@cache
def _deprecated_fields() -> frozenset:
    """Pydantic fields DeepSpeed migrates into another (cpu_offload): written, the model no longer holds them."""
    names = set()
    stack = [schema.root()]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("x-deepspeed-deprecated") and "x-pydantic" in node:
                names.add(node["x-pydantic"]["field"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


def disagreements(real: dict, again: dict) -> list[str]:
    deprecated = _deprecated_fields()
    a, b = dict(leaves(real)), dict(leaves(again))
    out = []
    for pointer in sorted(set(a) | set(b)):
        x, y = a.get(pointer, "<absent>"), b.get(pointer, "<absent>")
        if pointer.rsplit("/", 1)[-1] in deprecated and "<absent>" in (x, y):
            continue  # pydantic drops a deprecated field it migrated; unwritten, it holds its default
        if not same(x, y):
            out.append(f"{pointer}: DeepSpeed holds {x!r}, the effective config written out gives {y!r}")
    return out


class Installed:
    """The installed DeepSpeed, in this process."""
    version = INSTALLED

    @staticmethod
    def verdict(config: dict, world: int, _held: bool = True) -> dict:
        """As tests.releases.Release.verdict with held=True."""
        with oracle.world(world):
            try:
                built = DeepSpeedConfig(copy.deepcopy(config))
            except Exception as error:  # noqa: BLE001 - whatever DeepSpeed raises is the verdict
                return {"ok": False, "error": f"{type(error).__name__}: {error}"}
        return {"ok": True, "error": None, "held": held(built)}


def _oracle(version: str):
    if version == INSTALLED:
        return Installed
    release = releases.release(version)
    if release is None:
        pytest.skip(f"DeepSpeed {version} could not be fetched (pip download failed)")
    return release


def compare(release, version: str, config: dict, world: int) -> str | None:
    """None when the view agrees with DeepSpeed `version`, else what differs."""
    schema.use(version)
    try:
        view = effective(config, world)
    finally:
        schema.use(NEWEST)
    truth = release.verdict(config, world, True)
    if not truth["ok"]:
        return None if view.failed else f"DeepSpeed raises {truth['error'][:200]}; the view says nothing"
    if view.failed:
        return f"the view says DeepSpeedConfig raises ({view.failed[:200]}); DeepSpeed does not"
    again = release.verdict(written_out(view), world, True)
    if not again["ok"]:
        return f"the effective config written out is refused: {again['error'][:300]}"
    found = disagreements(truth["held"], again["held"])
    return "; ".join(found[:4]) if found else None


def _every_release():
    """The installed release and tests.releases.DIFFERENTIAL; every other supported release as a slow test."""
    quick = (INSTALLED,) + releases.DIFFERENTIAL
    return list(quick) + [pytest.param(v, marks=pytest.mark.slow) for v in SUPPORTED if v not in quick]


@pytest.mark.skipif(not CORPUS, reason="no corpus")
@pytest.mark.parametrize("version", _every_release())
def test_corpus_effective_config_is_what_deepspeed_holds(version, capsys):
    release = _oracle(version)
    problems, agreed = [], 0
    for label, config in CORPUS:
        for world in WORLDS:
            problem = compare(release, version, config, world)
            if problem:
                problems.append(f"{label} @ {world}: {problem}")
            agreed += problem is None
    with capsys.disabled():
        print(f"\nDeepSpeed {version}: {agreed}/{len(CORPUS) * len(WORLDS)} corpus config × world size runs agree "
              "(the effective config holds what DeepSpeedConfig holds, or both say it raises)")
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:20])


@settings(max_examples=int(os.environ.get("DSCONFIG_VIEW_EXAMPLES", "400")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=configs_at())
def test_generated_effective_config_is_what_deepspeed_holds(case):
    config, world = case
    problem = compare(Installed, INSTALLED, config, world)
    assert problem is None, f"world {world}\n{json.dumps(config, indent=2)}\n{problem}"


def test_gradient_clipping_default_follows_the_release():
    """The one code default the releases changed: absent, it is 1.0 from 0.19.3 and 0.0 before."""
    config = {"train_batch_size": 8}
    shown = {}
    for version in ("0.19.2", "0.19.3", INSTALLED):
        schema.use(version)
        try:
            shown[version] = effective(config, 1).config["gradient_clipping"]
        finally:
            schema.use(NEWEST)
    assert shown == {"0.19.2": 0.0, "0.19.3": 1.0, INSTALLED: 1.0}
    assert Installed.verdict(config, 1)["held"]["gradient_clipping"] == 1.0
