"""Who hands a ds_config.json to DeepSpeed: the target a DeepSpeed config is linted for.

The same file means different things to different readers. Plain `deepspeed.initialize` reads a
path with DeepSpeed's own hjson loader and receives "auto" as it is written; the HF Trainer,
Accelerate's prepare() and Lightning read it with `json.load`; the HF Trainer and Accelerate
replace some "auto" values first and refuse the rest (both through Accelerate's DeepSpeedPlugin).
"""

from __future__ import annotations

from typing import NamedTuple


class Target(NamedTuple):
    name: str  # as `--target` and `[tool.dsconfig] target` spell it
    loader: str  # "hjson" (DeepSpeed's own loader) or "json" (json.load)
    fills_auto: bool  # Accelerate's DeepSpeedPlugin fills "auto" values and refuses the ones it cannot fill
    who: str  # how messages name it


DEEPSPEED = Target("deepspeed", "hjson", False, "plain deepspeed.initialize")
HF_TRAINER = Target("hf-trainer", "json", True, "the HF Trainer")
ACCELERATE = Target("accelerate", "json", True, "Accelerate's prepare()")
LIGHTNING = Target("lightning", "json", False, "Lightning's DeepSpeedStrategy")

TARGETS = (DEEPSPEED, HF_TRAINER, ACCELERATE, LIGHTNING)
NAMES = tuple(target.name for target in TARGETS)
BY_NAME = {target.name: target for target in TARGETS}
