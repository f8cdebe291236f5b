"""DS706 against TRL 1.16.0's GRPOConfig: generated arguments and world sizes, the real __post_init__ as oracle
(its world_size property set to the launch's), the same verdict and the same message word for word."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsconfig.launch import grpo

ARGUMENTS = st.fixed_dictionaries({}, optional={
    "per_device_train_batch_size": st.sampled_from([1, 2, 3, 4, 8]),
    "gradient_accumulation_steps": st.sampled_from([1, 2, 3, 4]),
    "num_generations": st.sampled_from([1, 2, 3, 4, 6, 8, 16]),
    "generation_batch_size": st.sampled_from([8, 12, 16, 32]),
    "steps_per_generation": st.sampled_from([1, 2, 4]),
    "eval_strategy": st.sampled_from(["no", "steps"]),
    "per_device_eval_batch_size": st.sampled_from([1, 2, 4, 8]),
    "num_generations_eval": st.sampled_from([2, 4]),
})


def real_error(values: dict, world: int, tmp: str) -> str | None:
    from trl import GRPOConfig
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        patch.setattr(GRPOConfig, "world_size", property(lambda self: world))
        try:
            GRPOConfig(output_dir=tmp, bf16=False, fp16=False, use_cpu=True, report_to="none", **values)
        except ValueError as error:
            return str(error)
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(ARGUMENTS, st.sampled_from([1, 2, 3, 4, 7, 8, 16]))
def test_generation_batch_against_grpo_config(tmp_path_factory, values, world):
    real = real_error(values, world, str(tmp_path_factory.getbasetemp()))
    mine = grpo.problems(values, world)
    assert (real is None) == (not mine), (values, world, real, mine)
    if real is not None:
        assert real == mine[0].message


def test_defaults_are_grpo_config_s():
    import dataclasses

    from trl import GRPOConfig
    fields = {field.name: field.default for field in dataclasses.fields(GRPOConfig)}
    assert all(fields[name] == value for name, value in grpo.defaults().items()
               if name in ("per_device_train_batch_size", "gradient_accumulation_steps", "num_generations"))


SCRIPT = """\
from trl import GRPOConfig, GRPOTrainer, ModelConfig, TrlParser

if __name__ == "__main__":
    parser = TrlParser((GRPOConfig, ModelConfig))
    training_args, model_args = parser.parse_args_and_config()
    GRPOTrainer(model=model_args.model_name_or_path, args=training_args).train()
"""


def lint(folder, *args):
    result = subprocess.run([sys.executable, "-m", "dsconfig", "lint", *args], cwd=folder, capture_output=True,
                            text=True, env={**os.environ, "DSCONFIG_NO_CACHE": "1", "NO_COLOR": "1"})
    assert "Traceback" not in result.stderr
    return result


def test_a_launch_with_a_recipe_and_flags(tmp_path):
    """open-r1's shape: accelerate launch --num_processes 7 (one GPU for vLLM) with a recipe and flags over it."""
    (tmp_path / "grpo.py").write_text(SCRIPT)
    (tmp_path / "recipe.yaml").write_text("per_device_train_batch_size: 4\nnum_generations: 16\n"
                                          "gradient_accumulation_steps: 2\n")
    (tmp_path / "train.sh").write_text("accelerate launch --num_processes=7 grpo.py --config recipe.yaml\n")
    result = lint(tmp_path, ".")
    assert result.returncode == 1
    assert result.stdout.startswith('./train.sh:1:1: error DS706 on 7 GPUs, GRPOConfig raises "ValueError: '
                                    'generation_batch_size (56) must be divisible by num_generations (16)."')
    (tmp_path / "train.sh").write_text("accelerate launch --num_processes=7 grpo.py --config recipe.yaml "
                                       "--gradient_accumulation_steps 16\n")  # 4 × 7 × 16 = 448 = 28 × 16
    assert lint(tmp_path, ".").returncode == 0
    (tmp_path / "train.sh").write_text("accelerate launch --num_processes=$N grpo.py --config recipe.yaml\n")
    assert lint(tmp_path, ".").returncode == 0  # the processes are the caller's: not guessed


def test_lint_the_grpo_command_about_to_run(tmp_path):
    """`dsconfig lint -- accelerate launch ...`: the finding is placed on the script the command runs."""
    (tmp_path / "grpo.py").write_text(SCRIPT)
    (tmp_path / "recipe.yaml").write_text("per_device_train_batch_size: 4\nnum_generations: 16\n"
                                          "gradient_accumulation_steps: 2\n")
    (tmp_path / "zero3.yaml").write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n"
                                         "num_machines: 1\nnum_processes: 7\n")
    command = ["--", "accelerate", "launch", "--config_file", "zero3.yaml", "grpo.py", "--config", "recipe.yaml"]
    result = lint(tmp_path, *command)
    assert result.returncode == 1
    assert result.stdout.startswith("grpo.py:1:1: error DS706 on 7 GPUs, GRPOConfig raises")
    result = lint(tmp_path, *command, "--num_generations", "14")
    assert result.returncode == 0, result.stdout
    result = lint(tmp_path, "--", "accelerate", "launch", "grpo.py", "--config", "recipe.yaml")
    assert result.returncode == 2 and "nor a GRPO script at a world size it fixes" in result.stderr
