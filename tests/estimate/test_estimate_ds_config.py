"""`dsconfig estimate ds_config.json` reads the file as DeepSpeed does: the linter's resolved
sections (dsconfig.deepspeed.models) and its batch arithmetic, checked against the real DeepSpeed.

The tests without DeepSpeed pin the reading; the oracle tests build DeepSpeed's own config from
the same file (DeepSpeedConfig(path): hjson loading, pydantic sections, batch arithmetic at world
size 1 without a process group) or from the same sections (get_zero_config, get_bfloat16_config,
get_float16_config) and compare what both read.
"""

from __future__ import annotations

import copy
import json

import pytest

from dsconfig.estimate.deepspeed_config import from_dict, read
from tests.conftest import ROOT, modules_after, quiet_and_restored

MBS = "train_micro_batch_size_per_gpu"
BUCKETS = ("reduce_bucket_size", "allgather_bucket_size", "prefetch_bucket_size", "param_persistence_threshold",
           "max_live_parameters")


def notes_about(notes: list[str], fragment: str) -> list[str]:
    return [note for note in notes if fragment in note]


# -- the three readings that used to disagree with DeepSpeed -------------------------------------------

def test_a_stage_written_as_text_is_the_stage():
    values, notes = from_dict({"zero_optimization": {"stage": "3"}})
    assert values["zero_stage"] == 3 and notes == []


@pytest.mark.parametrize("key", ["prefetch_bucket_size", "stage3_prefetch_bucket_size"])
def test_prefetch_bucket_size_under_either_spelling(key):
    values, _ = from_dict({"zero_optimization": {"stage": 3, key: 12_345}})
    assert values["buckets"]["prefetch_bucket_size"] == 12_345


def test_bf16_hides_the_legacy_bfloat16():
    values, notes = from_dict({"bf16": {"enabled": False}, "bfloat16": {"enabled": True}})
    assert values["precision"] == "fp32"
    assert notes_about(notes, "bfloat16 is ignored")
    values, _ = from_dict({"bf16": None, "bfloat16": {"enabled": True}})  # null bf16: DeepSpeed falls back
    assert values["precision"] == "bf16"


# -- what DeepSpeed refuses, and "auto" ------------------------------------------------------------------

def test_a_section_deepspeed_rejects_is_read_as_the_linter_repairs_it():
    """A misspelt key: DeepSpeed refuses the section, the estimate still sizes the stage that was written."""
    values, notes = from_dict({"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_sise": 1}})
    assert values["zero_stage"] == 3 and values["buckets"]["prefetch_bucket_size"] == 50_000_000
    [note] = notes_about(notes, "DeepSpeed rejects zero_optimization")
    assert "stage3_prefetch_bucket_sise" in note and "as if that were fixed" in note


def test_a_section_nothing_repairs_keeps_the_defaults():
    values, notes = from_dict({"zero_optimization": {"stage": [3]}})
    assert "zero_stage" not in values and "buckets" not in values
    [note] = notes_about(notes, "DeepSpeed rejects zero_optimization")
    assert "keeps its default" in note


def test_a_precision_section_deepspeed_rejects_keeps_the_default_precision():
    values, notes = from_dict({"bf16": {"enabled": "maybe"}})
    assert "precision" not in values and notes_about(notes, "DeepSpeed rejects bf16")
    values, notes = from_dict({"bf16": {"enabled": True}, "fp16": {"enabled": True}})
    assert "precision" not in values and notes_about(notes, "cannot be simultaneously enabled")


@pytest.mark.parametrize("key", ["stage3_prefetch_bucket_size", "prefetch_bucket_size"])
def test_auto_sizes_keep_the_estimate_default_with_a_note(key):
    values, notes = from_dict({"zero_optimization": {"stage": 3, key: "auto", "reduce_bucket_size": "auto",
                                                     "offload_param": {"device": "auto"}}})
    assert values["zero_stage"] == 3
    assert "prefetch_bucket_size" not in values["buckets"] and "reduce_bucket_size" not in values["buckets"]
    assert "offload_param" not in values
    for where in (f"zero_optimization.{key}", "zero_optimization.reduce_bucket_size",
                  "zero_optimization.offload_param.device"):
        assert notes_about(notes, f'{where} is "auto"'), notes


def test_overlap_comm_is_taken_only_when_written():
    values, _ = from_dict({"zero_optimization": {"stage": 2}})
    assert "overlap_comm" not in values["buckets"]  # DeepSpeed derives it from the stage, so does the estimate
    values, _ = from_dict({"zero_optimization": {"stage": 2, "overlap_comm": "yes"}})
    assert values["buckets"]["overlap_comm"] is True


def test_deprecated_and_legacy_forms_are_migrated():
    values, _ = from_dict({"zero_optimization": {"stage": 2, "cpu_offload": True}})
    assert values["offload_optimizer"] == "cpu"
    values, _ = from_dict({"zero_optimization": True})  # the legacy boolean: stage 1
    assert values["zero_stage"] == 1


@pytest.mark.parametrize("written,micro,note", [
    (4, 4, None), (10.0, 10, None), (True, 1, None),
    (2.5, None, "not a whole number"), ("4", None, "TypeError"), (0, None, "greater than 0"),
    (-2, None, "greater than 0"), ("auto", None, '"auto"'), (None, None, None),
])
def test_micro_batch_as_deepspeed_computes_with_it(written, micro, note):
    values, notes = from_dict({MBS: written})
    assert values.get("micro_batch") == micro
    assert bool(note) == bool(notes_about(notes, MBS))
    assert note is None or notes_about(notes, note), notes


def test_the_estimate_path_with_a_ds_config_imports_nothing_heavy(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({"zero_optimization": {"stage": "3"}, "bf16": {"enabled": True}}))
    loaded = {name.split(".")[0] for name in modules_after(["estimate", str(path), "--params", "7B"], ROOT)}
    assert not loaded & {"torch", "deepspeed", "accelerate", "transformers", "pydantic"}


# -- the real DeepSpeed as the oracle ----------------------------------------------------------------------

def offload_device(offload) -> str:
    """The device of a DeepSpeed offload config: an enum, or its text once migrated from cpu_offload."""
    if offload is None:
        return "none"
    return getattr(offload.device, "value", offload.device)


def deepspeed_reading(path) -> dict:
    """What DeepSpeed makes of the file, in the estimate's terms."""
    pytest.importorskip("deepspeed")
    from deepspeed.runtime.config import DeepSpeedConfig
    with quiet_and_restored():
        config = DeepSpeedConfig(str(path))  # hjson loading included; world size 1 without a process group
    zero = config.zero_config
    precision = "bf16" if config.bfloat16_config.enabled else "fp16" if config.float16_config.enabled else "fp32"
    return {
        "zero_stage": int(config.zero_optimization_stage),
        "precision": precision,
        "micro_batch": config.train_micro_batch_size_per_gpu,
        "offload_optimizer": offload_device(zero.offload_optimizer),
        "offload_param": offload_device(zero.offload_param),
        "buckets": {name: getattr(zero, name) for name in BUCKETS},
        "overlap_comm": zero.overlap_comm,
    }


ORACLE_FILES = {
    "stage as text": '{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": "3"}}',
    "prefetch_bucket_size": '{"train_micro_batch_size_per_gpu": 2, '
                            '"zero_optimization": {"stage": 3, "prefetch_bucket_size": 12345}}',
    "stage3_prefetch_bucket_size": '{"train_micro_batch_size_per_gpu": 2, '
                                   '"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 2e7}}',
    "bf16 over bfloat16": '{"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": false}, '
                          '"bfloat16": {"enabled": true}}',
    "legacy bfloat16": '{"train_micro_batch_size_per_gpu": 2, "bfloat16": {"enabled": true}}',
    "fp16": '{"train_micro_batch_size_per_gpu": 2, "fp16": {"enabled": "true"}}',
    "cpu_offload": '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "cpu_offload": true}}',
    "offload and aliases": '{"train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": true}, '
                           '"zero_optimization": {"stage": 3.0, "offload_optimizer": {"device": "nvme"}, '
                           '"offload_param": {"device": "cpu"}, "overlap_comm": false, "reduce_bucket_size": 5e7, '
                           '"param_persistence_threshold": "1000", "stage3_max_live_parameters": 3e8}}',
    "hjson": "{\n  // comments and quoteless keys, as DeepSpeed reads them\n  train_micro_batch_size_per_gpu: 4\n"
             "  zero_optimization: {stage: 2, allgather_bucket_size: 2e8}\n  fp16: {enabled: true}\n}\n",
    "legacy boolean zero": '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": true}',
}


@pytest.mark.parametrize("text", ORACLE_FILES.values(), ids=ORACLE_FILES.keys())
def test_the_estimate_reads_what_deepspeed_reads(tmp_path, text):
    path = tmp_path / "ds_config.json"
    path.write_text(text)
    expected = deepspeed_reading(path)
    values, notes = read(str(path))
    assert not notes_about(notes, "DeepSpeed rejects"), notes
    for key in ("zero_stage", "precision", "micro_batch", "offload_optimizer", "offload_param"):
        assert values[key] == expected[key], key
    buckets = values["buckets"]
    assert {name: buckets[name] for name in expected["buckets"]} == expected["buckets"]
    assert buckets.get("overlap_comm", expected["overlap_comm"]) == expected["overlap_comm"]


@pytest.mark.parametrize("written", [4, 10.0, True, 2.5, "4", 0, -2, [2]])
def test_the_micro_batch_agrees_with_deepspeed(tmp_path, written):
    pytest.importorskip("deepspeed")
    from deepspeed.runtime.config import DeepSpeedConfig
    try:
        with quiet_and_restored():
            micro = DeepSpeedConfig({MBS: written}).train_micro_batch_size_per_gpu
    except Exception:  # noqa: BLE001 - DeepSpeed refusing the value
        micro = None
    values, _ = from_dict({MBS: written})
    whole = micro is not None and float(micro).is_integer()
    assert values.get("micro_batch") == (int(micro) if whole else None)


# -- a property over generated sections ----------------------------------------------------------------

def test_generated_sections_read_as_deepspeed_reads_them():
    """On generated zero_optimization / bf16 / bfloat16 / fp16 sections, whatever estimate takes is what
    DeepSpeed resolves, and what it leaves out is explained by a note ("auto" or a refusal)."""
    pytest.importorskip("deepspeed")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from deepspeed.runtime.precision_config import get_bfloat16_config, get_float16_config
    from deepspeed.runtime.zero.config import get_zero_config

    # Mostly values DeepSpeed takes (some only after coercion), sometimes ones it refuses or "auto".
    sizes = st.one_of(st.integers(0, 10 ** 9), st.integers(1, 10 ** 9),
                      st.sampled_from([5e8, 2.5, -1, "500", "5e8", "auto", None, True]))
    flags = st.one_of(st.booleans(), st.sampled_from([True, False, "auto", "yes", "off", 1, 0, 2, None, "maybe"]))
    offload = st.one_of(st.none(), st.sampled_from(["auto", "cpu"]),
                        st.fixed_dictionaries({"device": st.sampled_from(["cpu", "nvme", "none"])}),
                        st.fixed_dictionaries({"device": st.sampled_from(["cpu", "auto", "CPU", None])}))
    stages = st.one_of(st.sampled_from([0, 1, 2, 3]), st.sampled_from([2, 3, "3", 3.0, "auto", 4, "two", True]))
    zero_fields = {
        "reduce_bucket_size": sizes, "allgather_bucket_size": sizes, "prefetch_bucket_size": sizes,
        "stage3_prefetch_bucket_size": sizes, "stage3_param_persistence_threshold": sizes,
        "max_live_parameters": sizes, "overlap_comm": flags, "offload_optimizer": offload, "offload_param": offload,
        "cpu_offload": st.booleans(), "stage3_prefetch_bucket_sise": sizes,
    }
    zero_dicts = st.builds(
        lambda stage, fields: fields if stage is None else {"stage": stage, **fields},
        st.one_of(stages, stages, st.none()),
        st.dictionaries(st.sampled_from(sorted(zero_fields)), st.none(), max_size=4).flatmap(
            lambda keys: st.fixed_dictionaries({key: zero_fields[key] for key in keys})))
    zero_sections = st.one_of(zero_dicts, zero_dicts, zero_dicts, st.sampled_from([True, False, "auto", None]))
    precision_sections = st.one_of(st.fixed_dictionaries({"enabled": flags}), st.just({}),
                                   st.sampled_from([None, True, "auto"]))
    present = st.sampled_from([True, False])

    def deepspeed_builds(fetch, config):
        try:
            with quiet_and_restored():
                return fetch(config)
        except Exception:  # noqa: BLE001 - DeepSpeed refusing the section
            return None

    def check_zero(config, values, notes):
        zero = deepspeed_builds(get_zero_config, config)
        if zero is None:  # read as repaired, or not at all: either way the note says DeepSpeed refuses it
            assert notes_about(notes, "DeepSpeed rejects zero_optimization"), (config, notes)
            return
        written = config.get("zero_optimization")
        written = written if isinstance(written, dict) else {}
        auto = {key for key, value in written.items() if value == "auto"}
        expected = {"zero_stage": int(zero.stage), "offload_optimizer": zero.offload_optimizer,
                    "offload_param": zero.offload_param}
        for key in ("offload_optimizer", "offload_param"):
            expected[key] = offload_device(expected[key])
            if key in auto or isinstance(written.get(key), dict) and written[key].get("device") == "auto":
                expected[key] = None
        if "stage" in auto:
            expected["zero_stage"] = None
        for key, value in expected.items():
            assert values.get(key) == value, (key, config, values)
        buckets = values["buckets"]
        for name in BUCKETS:
            spellings = {name, "stage3_" + name}
            assert buckets.get(name) == (None if spellings & auto else getattr(zero, name)), (name, config)
        overlap_written = written.get("overlap_comm") not in (None, "auto")
        assert buckets.get("overlap_comm") == (zero.overlap_comm if overlap_written else None)

    def check_precision(config, values, notes):
        bf16 = deepspeed_builds(get_bfloat16_config, config)
        fp16 = deepspeed_builds(get_float16_config, config)
        if bf16 is None or fp16 is None:  # read as repaired, or not at all, and said so
            assert notes_about(notes, "DeepSpeed rejects"), (config, notes)
            return
        if bf16.enabled and fp16.enabled:
            assert "precision" not in values, (config, values)
            assert notes_about(notes, "DeepSpeed refuses"), (config, notes)
            return
        expected = "bf16" if bf16.enabled else "fp16" if fp16.enabled else "fp32"
        if "precision" in values:
            assert values["precision"] == expected, config
        else:  # only "auto" leaves DeepSpeed's fp32 to the launcher
            assert expected == "fp32" and notes_about(notes, '.enabled is "auto"'), (config, notes)

    @settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(zero=zero_sections, bf16=precision_sections, bfloat16=precision_sections, fp16=precision_sections,
           layout=st.tuples(present, present, present))
    def agree(zero, bf16, bfloat16, fp16, layout):
        config = {"zero_optimization": zero}
        config.update((key, section) for key, section, here in zip(("bf16", "bfloat16", "fp16"),
                                                                   (bf16, bfloat16, fp16), layout) if here)
        values, notes = from_dict(copy.deepcopy(config))
        check_zero(config, values, notes)
        check_precision(config, values, notes)

    agree()
