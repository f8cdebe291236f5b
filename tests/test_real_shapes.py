"""`dsconfig lint .` on the shapes real training repositories have (issue 26; verdicts in
bench/realprojects_verdicts.tsv): another framework's file is not read as a DeepSpeed config or as
TrainingArguments, a launch applies to its own project, a file that states its own world size keeps it, and
what cannot be told is not an error. Each fixture is written here in the shape of a real project's file."""

from __future__ import annotations

import json

from tests.helpers import lint_folder


def write(root, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def seen(root, **options) -> list[tuple[str, str]]:
    """(file, code) of the errors and warnings a walk of root reports."""
    return sorted((f.file.removeprefix(str(root) + "/"), f.code) for f in lint_folder(root, **options)
                  if f.severity != "info")


def skipped(root, name: str) -> str:
    """The DS005 note a walk gives `name`."""
    return next(f.message for f in lint_folder(root) if f.code == "DS005" and f.file.endswith(name))


def test_a_template_a_script_fills_is_skipped_and_said_so(tmp_path):
    """Megatron-DeepSpeed's ds_config_gpt_TEMPLATE.json: bare placeholders a shell script replaces with sed."""
    write(tmp_path, "examples/ds_config_gpt_TEMPLATE.json",
          '{\n  "train_batch_size" : CONFIG_BATCH_SIZE,\n  "train_micro_batch_size_per_gpu": CONFIG_MBSIZE,\n'
          '  "zero_optimization": {\n    "stage": ZERO_STAGE\n  },\n  "fp16": {"enabled": CONFIG_FP16_ENABLED}\n}\n')
    assert seen(tmp_path) == []
    assert "a template" in skipped(tmp_path, "TEMPLATE.json") and "CONFIG_BATCH_SIZE" in skipped(
        tmp_path, "TEMPLATE.json")
    # named on the command line it is linted as what DeepSpeed would read: the placeholders are strings
    from tests.helpers import lint
    assert {f.severity for f in lint(tmp_path / "examples/ds_config_gpt_TEMPLATE.json")} == {"error"}


def test_a_neox_config_is_not_a_deepspeed_config(tmp_path):
    """GPT-NeoX writes its own arguments with hyphens next to the DeepSpeed sections it hands on; an autotuning
    config's `stage` is a list, its search space."""
    write(tmp_path, "configs/small_tune.json", json.dumps({
        "pipe-parallel-size": 1, "model-parallel-size": 1, "num-layers": 12, "hidden-size": 768,
        "optimizer": {"type": "Adam", "params": {"lr": 0.0006}}, "train_micro_batch_size_per_gpu": 1,
        "zero_optimization": {"stage": [0, 1, 2, 3]}, "data-impl": "mmap"}, indent=2))
    assert seen(tmp_path, world_sizes=(8,)) == []
    assert "GPT-NeoX" in skipped(tmp_path, "small_tune.json")


def test_another_programs_object_named_like_a_deepspeed_key(tmp_path):
    """composer's algorithm card: `"gradient_clipping": {"name": ...}` is no DeepSpeed clipping value."""
    write(tmp_path, "composer/algorithms/gradient_clipping/metadata.json", json.dumps({
        "gradient_clipping": {"name": "Gradient Clipping", "class_name": "GradientClipping", "tldr": "..."}}))
    assert seen(tmp_path) == []


def test_axolotl_and_composer_yamls_are_not_trainer_arguments(tmp_path):
    """Their `fsdp_config` keys are their own (axolotl translates `fsdp_offload_params`; Composer's FSDP config
    needs no `fsdp` flag): no Trainer FSDP rule, and no Accelerate rule either."""
    write(tmp_path, "examples/llama-2/qlora-fsdp.yml",
          "base_model: NousResearch/Llama-2-7b-hf\nmicro_batch_size: 4\ngradient_accumulation_steps: 4\n"
          "learning_rate: 0.0002\noutput_dir: ./out\nfsdp:\n  - full_shard\n  - auto_wrap\nfsdp_config:\n"
          "  fsdp_offload_params: true\n  fsdp_use_orig_params: false\n  fsdp_sharding_strategy: FULL_SHARD\n")
    write(tmp_path, "scripts/train/yamls/llama-3-8b-fsdp.yaml",
          "max_duration: 1ep\nglobal_train_batch_size: 16\ndevice_train_microbatch_size: 2\nfsdp_config:\n"
          "  sharding_strategy: FULL_SHARD\n  activation_checkpointing: true\n")
    assert seen(tmp_path) == []


def test_a_launch_applies_to_its_own_project_not_a_sibling_example(tmp_path):
    """An example's accelerate YAML launching 8 processes says nothing of another example's training config."""
    write(tmp_path, "examples/a/accelerate_config.yaml",
          "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n")
    write(tmp_path, "examples/b/sft.yaml", "global_batch_size: 4\nmicro_batch_size: 1\n")
    assert seen(tmp_path) == []
    # the same file under the YAML's folder is that launch's
    write(tmp_path, "examples/a/configs/sft.yaml", "global_batch_size: 4\nmicro_batch_size: 1\n")
    assert seen(tmp_path) == [("examples/a/configs/sft.yaml", "DS208")]


def test_a_file_that_states_its_world_size_keeps_it(tmp_path):
    """litgpt's config_hub YAMLs say `devices: 1`; Lightning's say trainer.devices × trainer.num_nodes."""
    write(tmp_path, "config_hub/finetune/lora.yaml",
          "devices: 1\ntrain:\n  global_batch_size: 6\n  micro_batch_size: 2\n")
    assert seen(tmp_path, world_sizes=(8,)) == []
    write(tmp_path, "config_hub/finetune/lora.yaml",
          "trainer:\n  devices: 4\n  num_nodes: 2\ntrain:\n  global_batch_size: 6\n  micro_batch_size: 2\n")
    assert seen(tmp_path) == [("config_hub/finetune/lora.yaml", "DS208")]  # 6 over 8 GPUs × 2 per GPU


def test_megatron_style_batches_split_over_data_parallel_ranks(tmp_path):
    """NeMo: accumulation is derived from global / (micro × data-parallel size); the trainer's
    accumulate_grad_batches is not a factor, and tensor × pipeline parallel GPUs hold one replica."""
    write(tmp_path, "conf/megatron_gpt_config.yaml",
          "trainer:\n  devices: 8\n  num_nodes: 1\n  accumulate_grad_batches: 1\nmodel:\n"
          "  micro_batch_size: 4\n  global_batch_size: 8\n  tensor_model_parallel_size: 4\n"
          "  pipeline_model_parallel_size: 1\n")
    assert seen(tmp_path) == []  # 8 = 4 × 2 data-parallel ranks × 1 derived step
    write(tmp_path, "conf/megatron_gpt_config.yaml",
          "trainer:\n  devices: 8\n  accumulate_grad_batches: 1\nmodel:\n"
          "  micro_batch_size: 4\n  global_batch_size: 12\n  tensor_model_parallel_size: 2\n")
    assert seen(tmp_path) == [("conf/megatron_gpt_config.yaml", "DS208")]  # 12 over 4 ranks × 4 per rank
    finding = next(f for f in lint_folder(tmp_path) if f.code == "DS208")
    # the batch splits over data-parallel ranks, said as such; the world size is the launch's
    assert "4 data-parallel ranks (8 GPUs, 2 per model replica)" in finding.message, finding.message
    assert "GPUs ×" not in finding.message and finding.world_size == 8


def test_a_deepspeed_config_file_relative_to_a_folder_above_the_yaml(tmp_path):
    """trlx: examples/summarize_rlhf/configs/default_accelerate_config.yaml names configs/ds_config.json, and
    `accelerate launch` runs in examples/summarize_rlhf."""
    (tmp_path / ".git").mkdir()
    write(tmp_path, "examples/summarize_rlhf/configs/default_accelerate_config.yaml",
          "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n"
          "  deepspeed_config_file: configs/ds_config.json\n  zero3_init_flag: false\n")
    write(tmp_path, "examples/summarize_rlhf/configs/ds_config.json",
          json.dumps({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
                      "gradient_clipping": 1.0, "zero_optimization": {"stage": 2}}))
    assert "ACC020" not in [code for _, code in seen(tmp_path)]


def test_a_batchnorm_somewhere_is_no_error_for_every_config(tmp_path):
    """A BatchNorm in a test or a metric does not make every micro batch of 1 an error: the DS205 note cites it."""
    write(tmp_path, "tests/test_metric.py", "from torch import nn\n\nnorm = nn.BatchNorm1d(4)\n")
    write(tmp_path, "ds_config.json", json.dumps({"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0}))
    found = lint_folder(tmp_path)
    assert [f.code for f in found if f.severity != "info"] == []
    note = next(f for f in found if f.code == "DS205")
    assert "tests/test_metric.py:3" in note.message and "--batchnorm makes this an error" in note.message


def test_an_autotuning_config_needs_no_zero_section(tmp_path):
    """DeepSpeedExamples' autotuning/hf configs: the autotuner gives each experiment its own ZeRO stage."""
    config = {"train_micro_batch_size_per_gpu": "auto", "fp16": {"enabled": True},
              "autotuning": {"enabled": True, "arg_mappings": {"train_micro_batch_size_per_gpu":
                                                               "--per_device_train_batch_size"}}}
    write(tmp_path, "autotuning/hf/bert-base/ds_config_tune.json", json.dumps(config))
    assert seen(tmp_path) == []
    config["autotuning"]["enabled"] = False
    write(tmp_path, "autotuning/hf/bert-base/ds_config_tune.json", json.dumps(config))
    assert seen(tmp_path) == [("autotuning/hf/bert-base/ds_config_tune.json", "DS702")]



def test_a_comment_key_is_left_alone(tmp_path):
    """LLaMA-Factory's ds_z2_autotp_config.json writes `_comment`: JSON has no comments, DeepSpeed ignores it."""
    write(tmp_path, "ds_z2_config.json", json.dumps({"_comment": "AutoTP with ZeRO-2", "train_batch_size": 8,
                                                     "gradient_clipping": 1.0, "zero_optimization": {"stage": 2}}))
    assert seen(tmp_path, world_sizes=(8,)) == []
    write(tmp_path, "ds_z2_config.json", json.dumps({"comet_": {}, "train_batch_size": 8, "gradient_clipping": 1.0}))
    assert seen(tmp_path, world_sizes=(8,)) == [("ds_z2_config.json", "DS102")]


def test_hyphenated_keys_alone_do_not_make_a_neox_config(tmp_path):
    """A Hydra training YAML may write `model-name`: without a DeepSpeed key it is still a training config."""
    write(tmp_path, "configs/train.yaml", "model-name: resnet\ndata-dir: /data\ntrain:\n  batch_size: 7.5\n")
    assert seen(tmp_path) == [("configs/train.yaml", "DS006")]
