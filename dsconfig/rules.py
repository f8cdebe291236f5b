"""The rule registry: every code dsconfig can report, with its name and fixed severity.

One code, one severity, everywhere (terminal, JSON, SARIF). Where DeepSpeed's behaviour
depends on the target (hjson vs json.load, who fills "auto"), that shows in a finding's
`fails_in`, not in its severity. Codes group by area:

  DS0xx file and syntax       DS1xx keys and values      DS2xx batch arithmetic
  DS3xx ZeRO and offload      DS4xx precision and dtypes DS5xx optimizer and scheduler
  DS6xx other sections        DS7xx target integration ("auto", Trainer, Lightning)
  DS9xx dsconfig itself       ACCxxx Accelerate config files (YAML)
"""

from __future__ import annotations

from typing import NamedTuple

# docs/rules.md on the default branch; every rule's help URL is an anchor in it (SARIF helpUri).
DOCS_URL = "https://github.com/dsconfig/dsconfig/blob/main/docs/rules.md"

# (code prefix, heading) in the order docs/rules.md and `dsconfig rules` show them.
AREAS = (
    ("DS0", "DS0xx file and syntax"),
    ("DS1", "DS1xx keys and values"),
    ("DS2", "DS2xx batch arithmetic"),
    ("DS3", "DS3xx ZeRO and offload"),
    ("DS4", "DS4xx precision and dtypes"),
    ("DS5", "DS5xx optimizer and scheduler"),
    ("DS6", "DS6xx other sections"),
    ("DS7", "DS7xx target integration"),
    ("DS9", "DS9xx dsconfig itself"),
    ("ACC", "ACCxxx Accelerate config files"),
)


class Rule(NamedTuple):
    code: str
    name: str
    severity: str  # error | warning | info
    summary: str

    @property
    def anchor(self) -> str:
        """The rule's heading anchor in docs/rules.md (GitHub's slug of "DS202 batch-mismatch")."""
        return f"{self.code.lower()}-{self.name}"

    @property
    def url(self) -> str:
        """Stable help URL: the rule's section of docs/rules.md."""
        return f"{DOCS_URL}#{self.anchor}"

    @property
    def area(self) -> str:
        return next(title for prefix, title in AREAS if self.code.startswith(prefix))

    @property
    def docs(self):
        """What it does, why it matters, examples and fix (dsconfig.ruledocs.RuleDoc), loaded on first use."""
        from .ruledocs import DOCS
        return DOCS[self.code]


_TABLE = [
    # -- file and syntax ------------------------------------------------------------------
    ("DS000", "parse-error", "error", "The file cannot be loaded as the target loads it"),
    ("DS001", "duplicate-key", "error", "A key appears twice in the same object"),
    ("DS002", "hjson-syntax", "warning",
     "hjson-only syntax: DeepSpeed accepts it, json.load (HF Trainer, Accelerate, Lightning) does not"),
    ("DS003", "hjson-value-trap", "error",
     "A value hjson reads as a string although it looks like a number (+5, .5, 1_000, 007, NaN)"),
    ("DS004", "not-an-object", "error", "The top level of a DeepSpeed config must be a JSON object"),
    ("DS005", "not-a-config", "info", "Not a DeepSpeed or Accelerate config; skipped"),
    ("DS006", "non-integer-batch-size", "error",
     "A batch-size key outside DeepSpeed holds a non-integer (a PyTorch DataLoader rejects it)"),
    ("DS007", "file-too-large", "error", "A file named like a config is too large to be one; it is not linted"),
    # -- keys and values ------------------------------------------------------------------
    ("DS100", "removed-key", "error", "A block or key DeepSpeed 0.19.8 removed; loading the config fails"),
    ("DS101", "unknown-key", "error", "Unknown key in a validated section; DeepSpeed rejects it"),
    ("DS102", "ignored-key", "warning", "Unknown key in a section DeepSpeed reads loosely; it is silently ignored"),
    ("DS103", "invalid-value", "error", "A value DeepSpeed rejects while parsing the config"),
    ("DS104", "deprecated-key", "warning", "A deprecated key; DeepSpeed still migrates it"),
    ("DS105", "conflicting-keys", "error", "Two spellings of the same setting are given together"),
    ("DS106", "coerced-value", "warning", "DeepSpeed silently converts this value; write the canonical form"),
    ("DS107", "auto-ignored", "warning",
     "\"auto\" that nothing fills for this target; DeepSpeed drops it and uses the default"),
    ("DS108", "strict-key", "warning", "A key named `strict` is swallowed by DeepSpeed's config model"),
    ("DS109", "wrong-type", "warning", "A value of the wrong type in a section DeepSpeed does not validate"),
    ("DS110", "presence-enables", "warning", "The mere presence of this block turns the feature on"),
    # -- batch arithmetic -------------------------------------------------------------------
    ("DS200", "batch-missing", "error", "Neither train_batch_size nor train_micro_batch_size_per_gpu is given"),
    ("DS201", "batch-type", "error", "A batch size that is not a positive integer"),
    ("DS202", "batch-mismatch", "error",
     "train_batch_size != micro_batch × gradient_accumulation × world_size at this world size"),
    ("DS203", "batch-no-world-size", "error", "No world size satisfies the batch arithmetic"),
    ("DS204", "batch-world-sizes", "info", "The batch arithmetic holds only at some world sizes"),
    ("DS205", "micro-batch-one", "info",
     "One sample per GPU per step: BatchNorm layers fail with 'Expected more than 1 value per channel'"),
    ("DS206", "fractional-world-size", "error",
     "sequence_parallel_size does not divide the world size; DeepSpeed's data-parallel size becomes a float"),
    # -- ZeRO and offload -------------------------------------------------------------------
    ("DS300", "zero-legacy-format", "warning", "`zero_optimization` written as a boolean (legacy format)"),
    ("DS301", "offload-ignored", "warning", "Offload settings this ZeRO stage ignores or silently changes"),
    ("DS302", "partial-offload-stage", "error", "offload_optimizer.ratio < 1 needs ZeRO stage 3"),
    ("DS303", "nvme-path-missing", "error", "NVMe offload without nvme_path"),
    ("DS304", "stage-mismatched-keys", "warning", "Keys that only take effect at another ZeRO stage"),
    ("DS305", "compute-grad-norm", "error", "compute_grad_norm=false is only valid with ZeRO 1/2 and no clipping"),
    ("DS306", "allgather-bucket-odd", "error", "ZeRO 1/2 need an even allgather_bucket_size"),
    ("DS307", "legacy-stage1", "error", "legacy_stage1 is not supported since DeepSpeed 0.5.9"),
    ("DS308", "offload-client-optimizer", "warning",
     "Optimizer offload with a client optimizer needs zero_force_ds_cpu_optimizer: false"),
    ("DS309", "pipeline-zero", "error", "Pipeline parallelism is incompatible with ZeRO stage 2 and 3"),
    ("DS310", "managed-gradient-accumulation", "error",
     "managed_gradient_accumulation=false is unsupported in this combination"),
    ("DS311", "reduce-scatter-scaling", "error",
     "ZeRO 2/3 with reduce_scatter require gradient_predivide_factor 1.0 and no prescale_gradients"),
    ("DS312", "stage-auto", "warning", "\"stage\": \"auto\" left for DeepSpeed means ZeRO disabled"),
    # -- precision and dtypes ---------------------------------------------------------------
    ("DS400", "fp16-and-bf16", "error", "fp16 and bf16 are both enabled"),
    ("DS401", "bfloat16-key", "warning", "The legacy `bfloat16` key; write `bf16`"),
    ("DS402", "bfloat16-shadowed", "warning", "Both `bf16` and `bfloat16` are present; `bfloat16` is ignored"),
    ("DS403", "master-weights-stage", "error", "Low-precision master weights or optimizer states need ZeRO 1-3"),
    ("DS404", "master-weights-offload", "error", "Low-precision master weights need CPU optimizer offload"),
    ("DS405", "loss-scale-window", "error", "Dynamic fp16 loss scaling needs positive window and minimum scale"),
    ("DS406", "communication-dtype", "error", "communication_data_type must be fp16, bf16 or fp32"),
    ("DS407", "gradient-allreduce-op", "error", "gradient_allreduce_op must be mean or sum (sum not with ZeRO-3)"),
    ("DS408", "dtype-mismatch", "error", "data_types disagree with the precision mode"),
    ("DS409", "torch-autocast", "error", "Invalid torch_autocast settings"),
    ("DS410", "quoted-bool", "error", "A quoted boolean where DeepSpeed tests truthiness (\"false\" is true)"),
    ("DS411", "wall-clock-type", "error", "wall_clock_breakdown / flops_profiler.enabled must be booleans"),
    # -- optimizer and scheduler ------------------------------------------------------------
    ("DS500", "optimizer-name", "error", "optimizer.type is not an optimizer DeepSpeed can build"),
    ("DS501", "optimizer-params", "error", "optimizer.params the optimizer constructor rejects"),
    ("DS502", "untested-optimizer", "error", "ZeRO with an optimizer it does not support unless allowed"),
    ("DS503", "lamb-loss-scale", "error", "The LAMB optimizer requires dynamic loss scaling"),
    ("DS504", "muon-reduce-scatter", "error", "Muon with ZeRO-3 requires reduce_scatter: false"),
    ("DS505", "scheduler-name", "error", "scheduler.type is not a scheduler DeepSpeed knows"),
    ("DS506", "scheduler-params", "error", "scheduler.params the scheduler rejects"),
    ("DS507", "scheduler-advice", "warning", "Scheduler settings DeepSpeed warns about or silently changes"),
    ("DS508", "optimizer-without-type", "warning", "optimizer.params without optimizer.type are ignored"),
    ("DS509", "gradient-clipping-default", "info", "gradient_clipping unset: 1.0 since DeepSpeed 0.19.3, 0 before"),
    # -- other sections ---------------------------------------------------------------------
    ("DS600", "activation-checkpointing", "error", "Invalid activation_checkpointing combination"),
    ("DS601", "checkpoint-values", "error", "Invalid checkpoint section values"),
    ("DS602", "data-efficiency", "error", "An enabled data_efficiency feature lacks a required key"),
    ("DS603", "autotuning", "error", "Invalid autotuning section"),
    ("DS604", "tensor-parallel", "error", "Invalid tensor_parallel settings"),
    ("DS605", "section-type", "error", "A section of the wrong type crashes DeepSpeed or its integration"),
    ("DS606", "pipeline-flags", "error", "pipeline.pipe_partitioned / grad_partitioned must be real booleans"),
    ("DS607", "vocabulary-size", "warning", "vocabulary_size not a multiple of 8 (tensor-core alignment)"),
    # -- target integration -----------------------------------------------------------------
    ("DS700", "auto-unresolved", "error", "\"auto\" that this target never fills reaches code that cannot use it"),
    ("DS701", "lightning-gradient-accumulation", "error",
     "Lightning sets gradient_accumulation_steps itself and rejects it in the config"),
    ("DS702", "zero-section-required", "error", "The HF Trainer / Accelerate integration needs zero_optimization"),
    ("DS703", "trainer-mismatch", "error",
     "A concrete value the HF Trainer compares with TrainingArguments and rejects as a mismatch"),
    ("DS704", "auto-filled", "info", "What the HF Trainer / Accelerate fill an \"auto\" value with"),
    ("DS705", "steps-per-epoch", "info", "Optimizer steps per epoch and samples per GPU at each world size"),
    # -- dsconfig itself ---------------------------------------------------------------------
    ("DS900", "unused-suppression", "warning", "A suppression in the dsconfig configuration matched nothing"),
    # -- Accelerate config files ------------------------------------------------------------
    ("ACC001", "unknown-top-level-key", "error", "Unknown top-level key; Accelerate refuses to load the config"),
    ("ACC002", "ignored-deepspeed-key", "warning",
     "Unknown key under deepspeed_config; Accelerate silently ignores it"),
    ("ACC003", "ignored-section-key", "warning",
     "Unknown key under fsdp_config / dynamo_config / fp8_config / ...; Accelerate silently ignores it"),
    ("ACC004", "config-file-conflict", "error",
     "deepspeed_config_file together with keys Accelerate then refuses"),
    ("ACC005", "distributed-type", "error", "distributed_type missing or not a valid value"),
    ("ACC006", "mixed-precision", "error", "mixed_precision not one of no, fp16, bf16, fp8"),
    ("ACC007", "num-processes-missing", "error", "No num_processes for a distributed launch"),
    ("ACC008", "num-processes-indivisible", "error",
     "num_processes is not a multiple of num_machines; Accelerate silently floors the per-node count"),
    ("ACC009", "num-processes-per-node", "warning", "num_processes looks like a per-node count; it is the total"),
    ("ACC010", "gpu-ids", "error", "gpu_ids do not cover the processes launched per machine"),
    ("ACC011", "single-process-type", "warning", "distributed_type NO with more than one process launches one"),
    ("ACC012", "hostfile-missing", "error", "Multi-node DeepSpeed launch without a hostfile runs on one node"),
    ("ACC013", "main-process-ip", "error", "Multi-node launch without main_process_ip, or machine_rank out of range"),
    ("ACC014", "nvme-in-yaml", "error", "NVMe offload set in the Accelerate YAML; the path never reaches DeepSpeed"),
    ("ACC015", "stage-ignored", "warning", "Settings this ZeRO stage ignores (offload_param, zero3 flags below stage 3)"),
    ("ACC016", "yaml-boolean", "error", "An unquoted YAML 1.1 boolean (no, off, yes) where Accelerate expects text"),
    ("ACC017", "inline-gradient-accumulation", "warning",
     "gradient_accumulation_steps in the YAML conflicts with the Trainer's value unless they agree"),
    ("ACC018", "pair-mismatch", "error", "The Accelerate YAML and its ds_config.json disagree"),
    ("ACC019", "invalid-setting", "error", "A value of the wrong type or outside its allowed choices"),
    ("ACC020", "config-file-missing", "error", "deepspeed_config_file points to a file that does not exist"),
]

RULES: dict[str, Rule] = {}
for _code, _name, _severity, _summary in _TABLE:
    assert _code not in RULES, f"duplicate rule code {_code}"
    RULES[_code] = Rule(_code, _name, _severity, _summary)
BY_NAME = {rule.name: rule for rule in RULES.values()}
assert len(BY_NAME) == len(RULES), "duplicate rule name"
