"""What a ds_config.json says about memory: ZeRO stage, offload devices, precision, micro batch,
optimizer, bucket sizes and activation checkpointing.

The file is read once, the way the linter reads it: DeepSpeed's own hjson reading
(dsconfig.document), then DeepSpeed's pydantic sections as dsconfig.deepspeed.models replays them.
So zero_optimization, fp16 and bf16 come with DeepSpeed's coercions (`"3"` is stage 3), both
spellings of aliased fields (`stage3_prefetch_bucket_size` or `prefetch_bucket_size`), its
precedence (`bf16` hides the legacy `bfloat16`), deprecated fields migrated and defaults filled.
The micro batch goes through DeepSpeed's batch arithmetic (dsconfig.deepspeed.batch).

`"auto"` (filled later by the HF Trainer or Accelerate) and values DeepSpeed refuses leave the
estimate's default and add a note. A section DeepSpeed rejects (a misspelt key, say) is read as
the linter reads it for its cross-field checks: as if the finding were fixed (the key dropped, the
suggested value taken), with a note; only a section that not even that makes readable keeps the
estimate's defaults.
"""

from __future__ import annotations

from ..deepspeed import batch, schema
from ..deepspeed.models import assume_repaired, check_sections
from ..values import is_auto, to_json
from . import limits

OPTIMIZER_NAMES = {"adam": "adam", "adamw": "adamw", "lion": "lion", "sgd": "sgd", "adafactor": "adafactor"}

ZERO = "zero_optimization"
OFFLOAD_FIELDS = ("offload_optimizer", "offload_param")
# The zero_optimization fields (pydantic names) that size DeepSpeed's buffers: memory.Buckets.
BUCKET_FIELDS = ("reduce_bucket_size", "allgather_bucket_size", "prefetch_bucket_size",
                 "param_persistence_threshold", "max_live_parameters")

AUTO_NOTE = '{} is "auto" (filled by the HF Trainer/Accelerate): the estimate uses its default'
MICRO_AUTO_NOTE = (f'{batch.MBS} is "auto": the HF Trainer fills it from --per_device_train_batch_size; the '
                   'estimate assumes 1 (give --micro-batch N)')
# The ZeRO-3 sizes the HF Trainer fills from the model's hidden size h (HfTrainerDeepSpeedConfig.trainer_config_finalize).
TRAINER_BUCKETS = {"reduce_bucket_size": ("hidden_size²", lambda h: h * h),
                   "prefetch_bucket_size": ("int(0.9 × hidden_size²)", lambda h: int(0.9 * h * h)),
                   "param_persistence_threshold": ("10 × hidden_size", lambda h: 10 * h)}
BOTH_PRECISIONS = "bfloat16 and fp16 modes cannot be simultaneously enabled"  # DeepSpeedConfig's assertion


class ConfigError(ValueError):
    """The file cannot be read as a DeepSpeed config."""


def read(path: str) -> tuple[dict, list[str]]:
    """(TrainingSetup field values, notes) from a ds_config.json path."""
    try:
        return from_dict(_load(path))
    except limits.LimitError as error:  # DeepSpeed takes it, but no GPU holds that many samples
        raise ConfigError(f"{path}: {error}") from None


def _load(path: str) -> dict:
    """The config as DeepSpeed loads the file; ConfigError (one line) when it cannot."""
    from ..document import JsonDocument
    from ..files import FileError, read_text
    try:
        text = read_text(path)
    except FileError as error:
        raise ConfigError(str(error)) from None
    document = JsonDocument(path, text)
    loaded, config = document.reading("hjson")
    if not loaded:
        raise ConfigError(f"{path} is not a DeepSpeed config: {document.scan_error.message}")
    if not isinstance(config, dict):
        raise ConfigError(f"{path} is not a DeepSpeed config: the top level is not an object")
    return config


def from_dict(config: dict) -> tuple[dict, list[str]]:
    """(TrainingSetup field values, notes) from a config as DeepSpeed loads it."""
    reading = _Reading(config)
    values: dict = {}
    _read_precision(reading, values)
    _read_micro_batch(reading, values)
    _read_zero(reading, values)
    _read_optimizer(reading, values)
    _read_checkpointing(reading, values)
    return values, reading.notes


class _Reading:
    """One config as DeepSpeed's pydantic sections resolve it, and the notes taken while reading it."""

    def __init__(self, config: dict):
        sections = check_sections(config)
        self.config = config
        self.rejected = {name for name, values in sections.resolved.items() if values is None}
        self.resolved = assume_repaired(config, sections)
        self.findings = sections.findings
        self.auto_dropped = set(sections.auto_dropped)
        self.notes: list[str] = []

    def section(self, name: str, written_as: str, keeps: str) -> dict | None:
        """The resolved section `name` (written as `written_as`), repaired and noted when DeepSpeed rejects
        it; None, noted, when not even the repair makes it readable."""
        values = self.resolved.get(name)
        if name in self.rejected:
            why = self._why_rejected("/" + written_as)
            if values is None:
                self.notes.append(f"DeepSpeed rejects {written_as} ({why}): the estimate keeps its default {keeps}")
            else:
                self.notes.append(f"DeepSpeed rejects {written_as} ({why}): the estimate reads it as if that were "
                                  "fixed")
        return values

    def _why_rejected(self, pointer: str) -> str:
        for finding in self.findings:
            if finding.fails_in and (finding.pointer == pointer or finding.pointer.startswith(pointer + "/")):
                return finding.message
        return "it cannot be read"

    def says_auto(self, section: str, field: str, *inner: str) -> bool:
        """True, noted, when the file gives the field (under any spelling) as "auto": the models drop
        it for DeepSpeed's default, and the launcher fills it with a value the estimate cannot know."""
        for key in _spellings(section, field):
            path = (section, key, *inner)
            if "/" + "/".join(path) in self.auto_dropped:
                self.notes.append(AUTO_NOTE.format(".".join(path)))
                return True
        return False


def _spellings(section: str, field: str) -> list[str]:
    """The keys DeepSpeed takes for a pydantic field: its name and its alias (populate_by_name)."""
    model = schema.model_branch(schema.property_of(schema.root(), section))
    keys = [key for key, prop in model["properties"].items() if prop.get("x-pydantic", {}).get("field") == field]
    return keys or [field]


def _read_precision(reading: _Reading, values: dict) -> None:
    # DeepSpeed falls back to the legacy `bfloat16` only when `bf16` is absent or null.
    bf16_key = "bf16" if reading.config.get("bf16") is not None else "bfloat16"
    if bf16_key == "bf16" and "bfloat16" in reading.config:
        reading.notes.append("bfloat16 is ignored: DeepSpeed reads bf16 when both are present")
    bf16 = reading.section("bf16", bf16_key, "precision; pass --precision")
    fp16 = reading.section("fp16", "fp16", "precision; pass --precision")
    if bf16 is None or fp16 is None:
        return
    if bf16["enabled"] and fp16["enabled"]:
        reading.notes.append(f"DeepSpeed refuses {bf16_key} and fp16 both enabled ({BOTH_PRECISIONS}): "
                             "the estimate keeps its default precision; pass --precision")
    elif bf16["enabled"]:
        values["precision"] = "bf16"
    elif fp16["enabled"]:
        values["precision"] = "fp16"
    elif auto := _auto_precision(reading, bf16_key):
        reading.notes.append(f"{auto}.enabled is \"auto\": the precision comes from the launcher "
                             "(bf16 assumed; pass --precision)")
    else:
        values["precision"] = "fp32"  # neither enabled: DeepSpeed trains in fp32


def _auto_precision(reading: _Reading, bf16_key: str) -> str | None:
    """The precision section whose `enabled` is "auto" (dropped to false by DeepSpeed), if any."""
    for key in (bf16_key, "fp16"):
        if f"/{key}/enabled" in reading.auto_dropped:
            return key
    return None


def _read_micro_batch(reading: _Reading, values: dict) -> None:
    value = reading.config.get(batch.MBS)
    if value is None:  # DeepSpeed's get_scalar_param: absent and null both mean not given
        return
    if is_auto(value):
        reading.notes.append(MICRO_AUTO_NOTE)
        return
    # Alone the micro batch only meets DeepSpeed's arithmetic and its "> 0" assertions; how it
    # combines with train_batch_size depends on the world size, which the linter checks.
    outcome = batch.resolve(None, value, None, 1)
    if not outcome.ok:
        reading.notes.append(f"{batch.MBS} = {to_json(value)} fails in DeepSpeed ({outcome.error}): ignored")
        return
    # DeepSpeed computes with true as 1; as_int refuses booleans (the linter wants an integer written).
    samples = int(value) if isinstance(value, bool) else batch.as_int(value)
    if samples is None:
        reading.notes.append(f"{batch.MBS} = {to_json(value)} is not a whole number of samples: ignored")
        return
    if samples > limits.MICRO_BATCH.most:
        raise limits.LimitError(limits.too_large(f"{batch.MBS} is {limits.shown(value)}", limits.MICRO_BATCH))
    values["micro_batch"] = samples


def _read_zero(reading: _Reading, values: dict) -> None:
    zero = reading.section("zero_optimization", ZERO, "ZeRO stage, offload devices and bucket sizes")
    if zero is None:
        return
    if not reading.says_auto(ZERO, "stage"):
        values["zero_stage"] = zero["stage"]
    for field in OFFLOAD_FIELDS:
        if not (reading.says_auto(ZERO, field) or reading.says_auto(ZERO, field, "device")):
            offload = zero[field]
            values[field] = "none" if offload is None else offload["device"]
    buckets, filled_later = {}, []
    for field in BUCKET_FIELDS:
        if reading.says_auto(ZERO, field):
            filled_later.append(field)
        else:
            buckets[field] = zero[field]
    if filled_later:
        values["auto_buckets"] = filled_later
    if _overlap_comm_written(reading):
        buckets["overlap_comm"] = zero["overlap_comm"]
    values["buckets"] = buckets


def _overlap_comm_written(reading: _Reading) -> bool:
    """Unwritten (or null), overlap_comm follows the stage; keep it unset so --zero-stage moves it too."""
    section = reading.config.get(ZERO)
    return isinstance(section, dict) and section.get("overlap_comm") is not None \
        and not reading.says_auto(ZERO, "overlap_comm")


def _read_optimizer(reading: _Reading, values: dict) -> None:
    optimizer = reading.config.get("optimizer")
    if isinstance(optimizer, dict) and isinstance(optimizer.get("type"), str):
        name = optimizer["type"].lower()
        if name in OPTIMIZER_NAMES:
            values["optimizer"] = OPTIMIZER_NAMES[name]
        else:
            reading.notes.append(f"optimizer {optimizer['type']!r} is not modelled: Adam's states are assumed")


def _read_checkpointing(reading: _Reading, values: dict) -> None:
    checkpointing = reading.config.get("activation_checkpointing")
    if isinstance(checkpointing, dict):
        # the section configures deepspeed.checkpointing, used only when the model checkpoints its layers
        values["gradient_checkpointing"] = True
        if checkpointing.get("cpu_checkpointing") is True:
            values["cpu_checkpointing"] = True


def fill_trainer_buckets(auto: list[str], hidden: int, buckets: dict, notes: list[str]) -> None:
    """The "auto" ZeRO-3 sizes as the HF Trainer fills them from the model's hidden size; the "auto" note of
    each becomes the value used."""
    for field in auto:
        if field not in TRAINER_BUCKETS:
            continue
        words, size = TRAINER_BUCKETS[field]
        buckets[field] = size(hidden)
        written = {AUTO_NOTE.format(f"{ZERO}.{key}"): key for key in _spellings(ZERO, field)}
        notes[:] = [f'{ZERO}.{written[note]} is "auto": the HF Trainer fills it with {words} = {buckets[field]:,} '
                    f"(hidden size {hidden:,})" if note in written else note for note in notes]
