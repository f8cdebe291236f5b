"""DS7xx target integration: what depends on who hands the config to DeepSpeed (plain
deepspeed.initialize, the HF Trainer, Accelerate's prepare(), Lightning): "auto" values, the
Trainer's fill and mismatch check, the steps per epoch. Checked by dsconfig.deepspeed.target and
dsconfig.deepspeed.trainer.
"""

from __future__ import annotations

from ..phases import INITIALIZE, PARSE, SILENT, STEP
from .rule import ERROR, INFO, UNSAFE, Autofix, Rule, ds, folder

AUTO_UNRESOLVED = Rule(
    "DS700", "auto-unresolved", ERROR,
    summary='"auto" that this target never fills reaches code that cannot use it',
    what="""Reports an `"auto"` that the target never replaces: any `"auto"` under plain `deepspeed.initialize` or
    Lightning in a batch key or a loosely read setting, and, under the HF Trainer and Accelerate, an `"auto"` on a
    key neither of them fills (`sub_group_size`, `optimizer.params.eps`, ...).""",
    why="""Only the HF Trainer and Accelerate resolve `"auto"`. Handed to DeepSpeed as is, a batch key fails in
    `DeepSpeedConfig` with a `TypeError` such as "can't multiply sequence by non-int of type 'str'", and
    `"gradient_clipping": "auto"` in the first training step (`TypeError: '>' not supported between instances of
    'str' and 'float'`); under Accelerate's `prepare()` an unfillable `"auto"` raises
    "`zero_optimization.sub_group_size` not found in kwargs. Please specify `zero_optimization.sub_group_size`
    without `auto` (set to correct value) in the DeepSpeed config file or pass it in kwargs.\"""",
    fails_in=(PARSE, INITIALIZE, STEP, SILENT),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="deepspeed"),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_accumulation_steps": 8,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="deepspeed"),
    fix="""Write concrete values for this target, or run the config through the HF Trainer / Accelerate, which
    fill the `"auto"` values they know (DS704 lists them).""",
)

LIGHTNING_GRADIENT_ACCUMULATION = Rule(
    "DS701", "lightning-gradient-accumulation", ERROR,
    summary="Lightning sets gradient_accumulation_steps itself and rejects it in the config",
    what="""Reports `gradient_accumulation_steps` in a config used by Lightning's DeepSpeedStrategy (`--target
    lightning`).""",
    why="""Lightning sets the key itself from `accumulate_grad_batches` and refuses the config: "Do not set
    `gradient_accumulation_steps` in the DeepSpeed config as this will be set with the `accumulate_grad_batches`
    argument passed via the Lightning Trainer".""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_accumulation_steps": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="lightning"),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="lightning"),
    fix="Delete the key and pass `accumulate_grad_batches=4` to the Lightning Trainer.",
)

ZERO_SECTION_REQUIRED = Rule(
    "DS702", "zero-section-required", ERROR,
    summary="The HF Trainer / Accelerate integration needs zero_optimization",
    what="Reports a config for the HF Trainer or Accelerate without a `zero_optimization` section.",
    why="""Both build a DeepSpeedPlugin from the file, which refuses it: "Please specify the ZeRO optimization
    config in the DeepSpeed config." when the Trainer (or `prepare()`) starts.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": "auto"}
        }
        """, target="hf-trainer"),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "bf16": {"enabled": "auto"},
          "zero_optimization": {"stage": 0}
        }
        """, target="hf-trainer"),
    fix="""Add a `zero_optimization` section (`{"stage": 0}` to run without ZeRO).""",
)

TRAINER_MISMATCH = Rule(
    "DS703", "trainer-mismatch", ERROR,
    summary="A concrete value the HF Trainer compares with TrainingArguments and rejects as a mismatch",
    what="""With `--training-args`, replays the HF Trainer's `"auto"` fill and reports each concrete value that
    disagrees with TrainingArguments (micro batch, accumulation steps, train batch at the world size, precision,
    clipping, optimizer and scheduler values).""",
    why="""The Trainer collects every mismatch and fails at the start of `train()`: "Please correct the following
    DeepSpeed config values that mismatch TrainingArguments values: - ds train_micro_batch_size_per_gpu=16 vs hf
    per_device_train_batch_size=8". Typical when the JSON was written for another script or GPU count.""",
    fails_in=(INITIALIZE,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 16,
          "gradient_accumulation_steps": "auto",
          "gradient_clipping": "auto",
          "bf16": {"enabled": "auto"},
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,), training_args={"per_device_train_batch_size": 8, "bf16": True}),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "gradient_clipping": "auto",
          "bf16": {"enabled": "auto"},
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(8,), training_args={"per_device_train_batch_size": 8, "bf16": True}),
    fix="""Write `"auto"` for every value the Trainer fills, so TrainingArguments are the only source, or make the
    JSON agree with them.""",
    autofix=Autofix(
        UNSAFE,
        'Hands the value to the HF Trainer ("auto") instead of the one written.',
    ),
)

AUTO_FILLED = Rule(
    "DS704", "auto-filled", INFO,
    summary='What the HF Trainer / Accelerate fill an "auto" value with',
    what="""Shows, for the HF Trainer and Accelerate, which TrainingArguments (or `prepare()` values) fill each
    `"auto"`, and with `--training-args`, the concrete values.""",
    why="""An `"auto"` hides where the value comes from; the note shows it, e.g. that `gradient_clipping` becomes
    `max_grad_norm` (1.0 unless the script says otherwise), so the config can be reviewed as the run will see it.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": "auto",
          "gradient_clipping": "auto",
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer"),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 2,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, target="hf-trainer", note="Concrete values: nothing is filled, nothing to show."),
    fix="Nothing to fix; it is information. Pass `--training-args` to see the concrete values.",
)

STEPS_PER_EPOCH = Rule(
    "DS705", "steps-per-epoch", INFO,
    summary="Optimizer steps per epoch and samples per GPU at each world size",
    what="""With `--dataset-size N`, shows per world size optimizer steps per epoch, micro-batches and samples per
    GPU, and samples per optimizer step, counted the way the target's data loader and DeepSpeed's step counter
    really iterate.""",
    why="""The number of steps per epoch changes with the GPU count, and with it any schedule written in steps
    (warmup, decay, evaluation, checkpoints). Side by side, a schedule that only fits one GPU count is easy to
    spot, and steps that fall with the square of the GPU count reveal data that is sharded twice.""",
    fails_in=(SILENT,),
    failing=ds("""
        {
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(4, 8), dataset_size=10000),
    passing=ds("""
        {
          "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 4,
          "gradient_clipping": 1.0,
          "zero_optimization": {"stage": 2}
        }
        """, world_sizes=(4, 8), note="Without --dataset-size there is no table."),
    fix="Nothing to fix; it is information. Check that step-based schedules fit the step counts shown.",
)

_GRPO_SCRIPT = ("grpo.py", """
    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer, ModelConfig, TrlParser


    def main(script_args, training_args, model_args):
        trainer = GRPOTrainer(model=model_args.model_name_or_path, args=training_args,
                              train_dataset=load_dataset(script_args.dataset_name)["train"])
        trainer.train()


    if __name__ == "__main__":
        parser = TrlParser((GRPOConfig, ModelConfig))
        training_args, model_args = parser.parse_args_and_config()
        main(None, training_args, model_args)
    """)


def _grpo_launch(processes: int) -> tuple[str, str]:
    return ("train.sh", f"""
        accelerate launch --num_processes {processes} grpo.py \\
            --per_device_train_batch_size 4 \\
            --gradient_accumulation_steps 2 \\
            --num_generations 16
        """)


GRPO_GENERATION_BATCH = Rule(
    "DS706", "grpo-generation-batch", ERROR,
    summary="A GRPO launch whose generation batch does not hold whole groups of num_generations completions",
    what="""Reports a launch (a shell script, `lint -- COMMAND`) of a TRL GRPO script (GRPOConfig read by TrlParser
    or HfArgumentParser) whose world size and arguments (its flags over its `--config` file, over GRPOConfig's
    defaults) make GRPOConfig refuse them: a generation batch (per device × processes × steps per generation, or
    generation_batch_size) that is no multiple of num_generations, a generation_batch_size that is no multiple of
    the global batch, both given, fewer than 2 generations, or with evaluation on a global eval batch that is no
    multiple of the eval generations.""",
    why="""GRPOConfig's __post_init__ raises a ValueError ("generation_batch_size (96) must be divisible by
    num_generations (16).") as the script parses its arguments, on every process, before the model loads.""",
    fails_in=(PARSE,),
    failing=folder(_grpo_launch(3), _GRPO_SCRIPT, lint=("train.sh",)),
    passing=folder(_grpo_launch(4), _GRPO_SCRIPT, lint=("train.sh",)),
    fix="""Choose num_generations that divides the generation batch, or the processes, per-device batch and
    accumulation (or steps_per_generation) whose product it divides.""",
)

RULES = (
    AUTO_UNRESOLVED, LIGHTNING_GRADIENT_ACCUMULATION, ZERO_SECTION_REQUIRED, TRAINER_MISMATCH, AUTO_FILLED,
    STEPS_PER_EPOCH, GRPO_GENERATION_BATCH,
)
