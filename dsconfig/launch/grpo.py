"""TRL's GRPOConfig replayed on a launch: the generation batch must hold whole prompt groups.

GRPOConfig.__post_init__ (TRL 1.16.0), with the launch's world size as its `world_size`:

* without generation_batch_size or steps_per_generation, steps_per_generation is gradient_accumulation_steps and
  generation_batch_size = per_device_train_batch_size × world size × steps_per_generation;
* generation_batch_size alone must be a multiple of per_device_train_batch_size × world size;
* both at once are refused;
* generation_batch_size must be a multiple of num_generations, which must be at least 2;
* with evaluation on, per_device_eval_batch_size × world size must be a multiple of num_generations_eval (else
  num_generations).

Older TRL releases asked more (per device × processes alone divisible by num_generations), never less, so a
configuration this replay refuses fails there too. The values are the launch's flags over its `--config` file
(TrlParser's order), over GRPOConfig's defaults.
"""

from __future__ import annotations

from typing import NamedTuple

from . import argv


class Problem(NamedTuple):
    message: str  # what GRPOConfig raises, word for word
    how: str  # where the numbers come from ("" when the message says it)
    fix: str


def defaults() -> dict:
    return argv.defaults("grpo_args")


def problems(values: dict, world: int) -> list[Problem]:
    """What GRPOConfig(**values) raises at `world` processes (the first, as __post_init__ stops there)."""
    merged = {**defaults(), **values}
    per_device = merged["per_device_train_batch_size"]
    accumulation = merged["gradient_accumulation_steps"]
    generations = merged["num_generations"]
    batch, steps = merged.get("generation_batch_size"), merged.get("steps_per_generation")
    numbers = (per_device, accumulation, generations, batch if batch is not None else 1,
               steps if steps is not None else 1)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in numbers):
        return []  # the replay reads whole positive numbers; TrainingArguments refuses the rest on its own
    step = per_device * world
    if batch is None and steps is None:
        batch, how = step * accumulation, (f"per_device_train_batch_size {per_device} × {world} processes × "
                                           f"gradient_accumulation_steps {accumulation}")
    elif batch is not None and steps is None:
        if batch % step:
            return [Problem(f"generation_batch_size ({batch}) must be divisible by the global batch size ({step}).",
                            f"per_device_train_batch_size {per_device} × {world} processes = {step}",
                            f"a multiple of {step} for generation_batch_size")]
        how = "generation_batch_size"
    elif batch is None:
        batch, how = step * steps, (f"per_device_train_batch_size {per_device} × {world} processes × "
                                    f"steps_per_generation {steps}")
    else:
        return [Problem("'generation_batch_size' and 'steps_per_generation' can not be both configured at the same "
                        "time", "", "one of the two")]
    found = []
    eval_on = merged.get("eval_strategy") not in (None, "no")  # TrainingArguments then sets do_eval
    eval_generations = merged.get("num_generations_eval") or generations
    eval_per_device = merged.get("per_device_eval_batch_size")
    if eval_on and isinstance(eval_per_device, int) and isinstance(eval_generations, int) and eval_generations > 0 \
            and (eval_per_device * world) % eval_generations:
        return [Problem(f"The global eval batch size ({eval_per_device} * {world}) must be divisible by the number of "
                        f"generations used for evaluation ({eval_generations}).", "",
                        f"per_device_eval_batch_size × {world} a multiple of {eval_generations}")]
    if batch % generations:
        found.append(Problem(f"generation_batch_size ({batch}) must be divisible by num_generations ({generations}).",
                             f"{how} = {batch}" if how != "generation_batch_size" else "",
                             _fixes(batch, generations, per_device, world, accumulation, how)))
    elif generations < 2:
        found.append(Problem(f"GRPO requires at least 2 generations per prompt to calculate the advantages. You "
                             f"provided {generations}, which is less than the minimum required.", "",
                             "num_generations 2 or more"))
    return found


def _fixes(batch: int, generations: int, per_device: int, world: int, accumulation: int, how: str) -> str:
    """num_generations that divides the batch (the largest below the one written), or the accumulation that
    makes the batch hold whole groups."""
    options = []
    divisors = [n for n in range(2, min(batch, generations)) if batch % n == 0]
    if divisors:
        options.append(f"num_generations {divisors[-1]}")
    if "gradient_accumulation_steps" in how:
        steps = next((n for n in range(accumulation + 1, accumulation + 65) if per_device * world * n % generations == 0),
                     None)
        if steps is not None:
            options.append(f"gradient_accumulation_steps {steps}")
    return " or ".join(options) if options else f"a generation batch that is a multiple of {generations}"
