"""The effective DeepSpeed config: what `DeepSpeedConfig(config)` ends up holding, in ds_config.json key space.

Computed statically for the release chosen with `schema.use(version)`: the pydantic sections come from
models.check_sections (by field name, mapped here to the JSON names users write), the `dict.get` sections
are the written keys over the schema's defaults, the batch triple is batch.resolve at the world size, and
whether DeepSpeedConfig raises is what the lint's load and parse checks say. Stdlib only: no torch,
deepspeed or pydantic. tests/explain/test_deepspeed_view.py compares it with the real DeepSpeedConfig.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

from ..deepspeed import batch, schema
from ..deepspeed.check import removed_keys
from ..deepspeed.loose import check_loose
from ..deepspeed.models import assume_repaired, check_sections
from ..phases import LOAD, PARSE
from ..pointers import pointer_join
from ..values import describe


class Effective(NamedTuple):
    config: dict  # the effective config, in ds_config.json key space
    defaulted: frozenset  # JSON pointers whose value is DeepSpeed's default: nothing written there
    derived: dict  # pointer -> short text, for values DeepSpeed computed
    failed: str | None  # when DeepSpeedConfig would raise on this config: one line why


# Keys DeepSpeedConfig reads without a default: shown only when written.
_ONLY_WHEN_WRITTEN = ("sequence_parallel_size", "data_parallel_size")
# Pydantic sections DeepSpeed builds only when the key is present (comm/config.py, runtime/config.py).
_BUILT_WHEN_PRESENT = ("comms_logger", "weight_quantization")
# Sections kept exactly as written (runtime/config.py get_optimizer_* / get_scheduler_*).
_AS_WRITTEN = ("optimizer", "scheduler")
# Defaults that live in DeepSpeed's code, not in a model, and changed between releases: key -> the
# release fact scripts/release_probe.py reads off DeepSpeedConfig.
_CODE_DEFAULTS = {"gradient_clipping": "gradient_clipping_default"}
# Sections whose other keys DeepSpeed copies on only while `enabled` is true (data_pipeline/config.py
# get_curriculum_learning, get_random_ltd); other "allow" sections pass every written key on.
_PASSED_ON_WHEN_ENABLED = ("/data_efficiency/data_sampling/curriculum_learning",
                           "/data_efficiency/data_routing/random_ltd")
# fp16 keys DeepSpeed before 0.17.1 passes to the optimizer only together (get_dynamic_loss_scale_args).
_DYNAMIC_LOSS_SCALE = ("initial_scale_power", "loss_scale_window", "min_loss_scale", "hysteresis",
                       "consecutive_hysteresis")
# Strings DeepSpeed lower-cases before keeping them (get_communication_data_type, get_gradient_allreduce_op).
_LOWERED = ("communication_data_type", "seq_parallel_communication_data_type", "seq_parallel_comm_data_type",
            "gradient_allreduce_op")


def effective(config: dict, world_size: int = 1) -> Effective:
    """For the release chosen with dsconfig.deepspeed.schema.use(version) (default the newest)."""
    if not isinstance(config, dict):
        return Effective({}, frozenset(), {}, f"the top level is {describe(config)}, not an object")
    view = _View(config)
    sections = check_sections(config)
    failed = _failure(config, sections, world_size)
    for key, prop in schema.root()["properties"].items():
        if _shown(key, prop, config):
            view.top_level(key, prop, sections.resolved, set(sections.auto_dropped))
    view.legacy_blocks()
    view.batch(world_size)
    return Effective(view.config, frozenset(view.defaulted), view.derived, failed)


def _shown(key: str, prop: dict, config: dict) -> bool:
    if key == "$schema" or key == "bfloat16" or "x-deepspeed-removed" in prop or prop.get("deprecated"):
        return False  # bfloat16 is merged into bf16, as get_bfloat16_config does
    return key not in _ONLY_WHEN_WRITTEN or key in config


def _failure(config: dict, sections, world_size: int) -> str | None:
    """The first thing DeepSpeedConfig raises on: removed blocks, the sections, then the batch check."""
    found = removed_keys(config) + sections.findings + check_loose(config, assume_repaired(config, sections))
    for finding in found:
        if finding.fails_in in (LOAD, PARSE) and finding.severity == "error":
            return finding.message
    try:
        dp = batch.data_parallel_size(config, world_size)
    except Exception as error:  # the same operation DeepSpeed runs on the same values
        return f"sequence_parallel_size {config.get(batch.SP)!r}: {type(error).__name__}: {error}"
    outcome = batch.resolve(*(config.get(key) for key in batch.BATCH_KEYS), dp)
    return None if outcome.ok else outcome.error


class _View:
    def __init__(self, written: dict):
        self.written = written
        self.config: dict = {}
        self.defaulted: set[str] = set()
        self.derived: dict[str, str] = {}

    def top_level(self, key: str, prop: dict, resolved: dict, auto_dropped: set) -> None:
        pointer = "/" + key
        model = schema.model_branch(prop)
        if key in batch.BATCH_KEYS:
            return  # batch(): they depend on one another and on the world size
        if key == "bf16":
            self._bf16(prop, resolved, auto_dropped)
        elif key in _AS_WRITTEN:
            self._scalar(key, None)
        elif key == "timers":
            self._model_section(key, {"throughput": "throughput"}, resolved.get("timers"),
                                {"throughput": schema.model_branch(schema.property_of(prop, "throughput"))},
                                self.written.get("timers"), auto_dropped)
        elif model is not None or key in resolved:
            if key in _BUILT_WHEN_PRESENT and key not in self.written:
                self.config[key] = None  # DeepSpeed builds no model: the feature is off
                self.defaulted.add(pointer)
            else:
                self._model_values(pointer, model, resolved.get(key), self.written.get(key), auto_dropped)
        elif schema.object_branch(prop) is not None and "properties" in schema.object_branch(prop):
            self._loose(key, prop)
        elif key == "wall_clock_breakdown":
            self._wall_clock(prop)
        else:
            default = schema.facts()[_CODE_DEFAULTS[key]] if key in _CODE_DEFAULTS else prop.get("default")
            self._scalar(key, default)

    def legacy_blocks(self) -> None:
        """Blocks a later release removed (amp, elasticity, progressive_layer_drop, ...) that this one
        still reads: its schema does not describe them, so they are shown as written."""
        known = schema.root()["properties"]
        for pointer, _ in schema.removed_in_newest():
            key = pointer[1:]
            if "/" not in key and key not in known and key in self.written:
                self.config[key] = copy.deepcopy(self.written[key])

    # -- top-level scalars -------------------------------------------------------------------------

    def _scalar(self, key: str, default) -> None:
        if key not in self.written:
            self.config[key] = default
            self.defaulted.add("/" + key)
            return
        value = self.written[key]
        if key in _LOWERED and isinstance(value, str):
            value = value.lower()
        self.config[key] = value

    def _wall_clock(self, prop: dict) -> None:
        """`wall_clock_breakdown | flops_profiler.enabled` (runtime/config.py): the profiler turns it on."""
        self._scalar("wall_clock_breakdown", prop.get("default"))
        flops = self.written.get("flops_profiler")
        enabled = flops.get("enabled", False) if isinstance(flops, dict) else False
        try:
            combined = self.config["wall_clock_breakdown"] | enabled
        except TypeError:
            return  # DeepSpeedConfig raises: failed says so
        if combined != self.config["wall_clock_breakdown"]:
            self.config["wall_clock_breakdown"] = combined
            self.defaulted.discard("/wall_clock_breakdown")
            self.derived["/wall_clock_breakdown"] = "flops_profiler.enabled is true"

    # -- the batch triple --------------------------------------------------------------------------

    def batch(self, world_size: int) -> None:
        written = [self.written.get(key) for key in batch.BATCH_KEYS]
        try:
            dp = batch.data_parallel_size(self.written, world_size)
        except Exception:
            dp = world_size  # DeepSpeedConfig raises (failed); the triple is shown as written
        outcome = batch.resolve(*written, dp)
        words = "data-parallel size" if batch.splits_world(self.written) else "world size"
        for key, given, value in zip(batch.BATCH_KEYS, written, outcome.values):
            self.config[key] = value
            if given is None and value is not None:
                self.derived["/" + key] = self._batch_text(key, written, dp, words)

    @staticmethod
    def _batch_text(key: str, written, dp, words: str) -> str:
        """How _set_batch_related_parameters computed `key` from the other two (runtime/config.py)."""
        tbs, mbs, gas = written
        if key == batch.TBS:
            factors = [f"{batch.MBS} {mbs}"] + ([f"{batch.GAS} {gas}"] if gas is not None else []) + [f"{words} {dp}"]
            return " × ".join(factors)
        if key == batch.GAS and mbs is not None:
            return f"{batch.TBS} {tbs} ÷ {batch.MBS} {mbs} ÷ {words} {dp}"
        if key == batch.GAS:
            return f"1: only {batch.TBS} or {batch.MBS} was given"
        if gas is not None:
            return f"{batch.TBS} {tbs} ÷ {words} {dp} ÷ {batch.GAS} {gas}"
        return f"{batch.TBS} {tbs} ÷ {words} {dp}"

    # -- pydantic sections -------------------------------------------------------------------------

    def _bf16(self, prop: dict, resolved: dict, auto_dropped: set) -> None:
        """get_bfloat16_config: `bf16` unless absent or null, then the legacy `bfloat16`; shown as bf16."""
        key = "bf16" if self.written.get("bf16") is not None or "bfloat16" not in self.written else "bfloat16"
        if schema.model_branch(prop) is None:  # before 0.17.1: `bf16` wins whenever it is present
            key = "bf16" if "bf16" in self.written else "bfloat16"
        model = schema.model_branch(schema.property_of(schema.root(), key))
        self._model_values("/bf16", model, resolved.get("bf16"), self.written.get(key), auto_dropped,
                           written_at="/" + key)

    def _model_section(self, key, names, values, models, written, auto_dropped) -> None:
        """A section whose members are models (timers: {"throughput": ...})."""
        if values is None:
            self.config[key] = None
            return
        written = written if isinstance(written, dict) else {}
        self.config[key] = {name: self._model_values(f"/{key}/{name}", models[name], values.get(field),
                                                     written.get(name), auto_dropped, keep=False)
                            for name, field in names.items()}

    def _model_values(self, pointer, model, values, written, auto_dropped, written_at=None, keep=True):
        """Field values by pydantic name -> by the JSON name users write (the alias where there is one),
        deprecated fields left out (their values already migrated)."""
        if values is None:
            result = None  # the model raises in DeepSpeed: failed says why
        elif model is None:  # fp16/bf16 before 0.17.1: plain `.get` per key, already named as written
            result = dict(values)
            self._mark_defaults(pointer, values, written if isinstance(written, dict) else {}, written_at or pointer,
                                auto_dropped)
            if pointer == "/fp16":
                self._legacy_loss_scale(result, written if isinstance(written, dict) else {})
            elif "bf16" not in self.written and "bfloat16" not in self.written and "immediate_grad_update" in result:
                result["immediate_grad_update"] = False  # get_bfloat16_immediate_grad_update without a block
        else:
            result = self._fields(pointer, model, values, written if isinstance(written, dict) else {},
                                  written_at or pointer, auto_dropped)
        if keep:
            self.config[pointer.rsplit("/", 1)[1]] = result
        return result

    def _fields(self, pointer, model, values, written, written_at, auto_dropped) -> dict:
        out = {}
        for key, prop in model["properties"].items():
            x = prop.get("x-pydantic")
            if x is None or "x-deepspeed-removed" in prop or prop.get("x-deepspeed-deprecated"):
                continue
            field, name = x["field"], x.get("alias") or x["field"]
            if key != name or field not in values:
                continue  # a field listed under its name and its alias: shown once, by the alias
            value, here = values[field], pointer_join(pointer, name)
            spelled = next((k for k in (name, field) if k in written), None)
            given = spelled is not None and pointer_join(written_at, spelled) not in auto_dropped
            given = given or any(self._migrated_into(model, field, written))
            nested = schema.model_branch(prop)
            if nested is not None and isinstance(value, dict):
                inner = written.get(spelled) if given else None
                value = self._fields(here, nested, value, inner if isinstance(inner, dict) else {},
                                     pointer_join(written_at, spelled or name), auto_dropped)
                if not given:
                    self.defaulted.add(here)
            elif not given:
                if model["x-deepspeed-model"]["class"].endswith("DeepSpeedZeroConfig") and field == "overlap_comm":
                    self.derived[here] = f"{str(value).lower()}: true exactly when zero_optimization.stage is 3"
                else:
                    self.defaulted.add(here)
            out[name] = value
        return out

    def _legacy_loss_scale(self, fp16: dict, written: dict) -> None:
        """Before 0.17.1, get_dynamic_loss_scale_args passes the five dynamic loss-scale settings on only when
        one of them is written; otherwise the optimizer gets none and uses its own (ZeRO's DynamicLossScaler
        starts at 2^32 with hysteresis 1), not the defaults a newer release shows."""
        if not written.get("enabled") or any(key in written for key in _DYNAMIC_LOSS_SCALE):
            return
        for key in _DYNAMIC_LOSS_SCALE:
            if key in fp16:
                fp16[key] = None
                here = pointer_join("/fp16", key)
                self.defaulted.discard(here)
                self.derived[here] = ("not passed on: none of " + ", ".join(_DYNAMIC_LOSS_SCALE) + " is written, so "
                                      "the optimizer uses its own loss scaling (under ZeRO from 2^32, hysteresis 1)")

    @staticmethod
    def _migrated_into(model: dict, field: str, written: dict):
        """Deprecated keys written whose value DeepSpeed moves into `field` (cpu_offload -> offload_optimizer)."""
        for key, prop in model["properties"].items():
            moved = prop.get("x-deepspeed-deprecated") or {}
            if key in written and moved.get("new_param") == field and moved.get("set_new_param", True):
                yield key

    def _mark_defaults(self, pointer, values: dict, written: dict, written_at: str, auto_dropped: set) -> None:
        for name in values:
            if name not in written:
                self.defaulted.add(pointer_join(pointer, name))

    # -- dict.get sections -------------------------------------------------------------------------

    def _loose(self, key: str, prop: dict) -> None:
        """The written keys over the schema's defaults, as the getters merge them; unknown keys are
        left out (DeepSpeed ignores them; `dsconfig lint` reports them)."""
        written = self.written.get(key, {})
        if written is None and key == "aio" or key == "expert_parallel" and not written:
            written = {}  # get_aio_config / parse_autoep_config: null (falsy) means the defaults
        self.config[key] = self._merged("/" + key, prop, written)

    def _merged(self, pointer: str, prop: dict, written):
        if not isinstance(written, dict):
            return written  # DeepSpeedConfig raises on it (failed), or keeps it as is
        out = {}
        branch = schema.object_branch(prop) or {}
        known = branch.get("properties", {})
        passed_on = pointer not in _PASSED_ON_WHEN_ENABLED or bool(written.get("enabled"))
        if not passed_on:  # DeepSpeed keeps only `enabled`
            written = {key: value for key, value in written.items() if key == "enabled"}
        for key, sub in known.items():
            here = pointer_join(pointer, key)
            if key in written:
                value = written[key]
                nested = schema.object_branch(sub)
                out[key] = self._merged(here, sub, value) if nested and nested.get("properties") and \
                    isinstance(value, dict) else value
            elif "default" in sub:
                out[key] = sub["default"]
                self.defaulted.add(here)
            elif (schema.object_branch(sub) or {}).get("properties"):
                nested = self._merged(here, sub, {})
                if nested:
                    out[key] = nested
        if branch.get("x-deepspeed-extra") == "allow":
            out.update((key, value) for key, value in written.items() if key not in known)
        return out

