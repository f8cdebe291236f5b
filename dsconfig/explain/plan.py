"""A DeepSpeed config and an FSDP config side by side, in the words both share.

The two backends name nothing alike (`zero_optimization.stage: 3` is `FULL_SHARD`, an offload device
is `cpu_offload`), so `dsconfig explain ds_config.json --diff fsdp.yaml` compares what each one does:
what is sharded, what is offloaded, the mixed precision, whether a save writes full weights, and the
batch settings where the config holds them. Each value keeps the source of the setting it comes from.

The plan holds what the files hold (a device, a stage written as text, a file name in a source): the text
escapes each value and source as it is placed (dsconfig.escape), the JSON is written by render.dumps.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .. import escape
from .chain import Explanation
from .render import source_text

NOT_HERE = "(not in this config: the script's or TrainingArguments')"


class Item(NamedTuple):
    value: object
    source: str


# FSDP sharding strategies: (optimizer states, gradients, parameters) sharded, and over which ranks.
_FSDP1 = {
    "FULL_SHARD": (True, True, True, "all ranks"),
    "SHARD_GRAD_OP": (True, True, False, "all ranks"),
    "NO_SHARD": (False, False, False, ""),
    "HYBRID_SHARD": (True, True, True, "the ranks of one node"),
    "HYBRID_SHARD_ZERO2": (True, True, False, "the ranks of one node"),
}


def _at(config: dict, *keys):
    node = config
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def deepspeed_plan(result: Explanation) -> dict[str, Item]:
    config = result.config
    stage = _at(config, "zero_optimization", "stage")
    stage_source = source_text(result, "/zero_optimization/stage")
    known = isinstance(stage, int) and not isinstance(stage, bool)
    plan = {"world size": Item(result.facts["world_size"], result.facts["world_size_from"])}
    for name, least in (("optimizer states sharded", 1), ("gradients sharded", 2), ("parameters sharded", 3)):
        plan[name] = Item((stage >= least) if known else stage, f"zero_optimization.stage {stage}: {stage_source}")
    plan["sharded over"] = Item("all ranks" if known and stage >= 1 else "", stage_source)
    param_device = _at(config, "zero_optimization", "offload_param", "device")
    optimizer_device = _at(config, "zero_optimization", "offload_optimizer", "device")
    plan["parameters offloaded to"] = Item(param_device if known and stage == 3 and param_device not in (None, "none")
                                           else "no",
                                           source_text(result, "/zero_optimization/offload_param/device"))
    plan["optimizer states offloaded to"] = Item(
        optimizer_device if known and stage >= 1 and optimizer_device not in (None, "none") else "no",
        source_text(result, "/zero_optimization/offload_optimizer/device"))
    bf16, fp16 = _at(config, "bf16", "enabled"), _at(config, "fp16", "enabled")
    mixed = "bf16" if bf16 is True else "fp16" if fp16 is True else "no"
    pointer = "/bf16/enabled" if mixed == "bf16" else "/fp16/enabled"
    plan["mixed precision"] = Item(mixed, source_text(result, pointer))
    if known and stage == 3:
        gather = _at(config, "zero_optimization", "stage3_gather_16bit_weights_on_model_save")
        plan["a save writes full weights"] = Item(gather is True, source_text(
            result, "/zero_optimization/stage3_gather_16bit_weights_on_model_save"))
    else:
        plan["a save writes full weights"] = Item(True, f"zero_optimization.stage {stage}: parameters are whole")
    for name, key in (("micro batch per GPU", "train_micro_batch_size_per_gpu"),
                      ("gradient accumulation steps", "gradient_accumulation_steps"),
                      ("gradient clipping", "gradient_clipping")):
        plan[name] = Item(config.get(key), source_text(result, f"/{key}"))
    return plan


def fsdp_plan(result: Explanation) -> dict[str, Item]:
    settings = result.config
    version = settings.get("fsdp_version")
    plan = {"world size": Item(result.facts["world_size"], result.facts["world_size_from"])}
    if version == 2:  # fully_shard always shards; reshard_after_forward false keeps them gathered (ZeRO-2-like)
        reshard = settings.get("reshard_after_forward")
        source = source_text(result, "/reshard_after_forward")
        shards = (True, True, reshard is not False, "all ranks")
    else:
        strategy = settings.get("sharding_strategy")
        source = source_text(result, "/sharding_strategy")
        shards = _FSDP1.get(strategy, (None, None, None, ""))
    for name, value in zip(("optimizer states sharded", "gradients sharded", "parameters sharded", "sharded over"),
                           shards):
        plan[name] = Item(value, source)
    offload = settings.get("cpu_offload") is True
    offload_source = source_text(result, "/cpu_offload")
    plan["parameters offloaded to"] = Item("cpu" if offload else "no", offload_source)
    plan["optimizer states offloaded to"] = Item("cpu" if offload else "no", offload_source)
    plan["mixed precision"] = Item(settings.get("mixed_precision"), source_text(result, "/mixed_precision"))
    plan["a save writes full weights"] = Item(settings.get("state_dict_type") == "FULL_STATE_DICT",
                                              source_text(result, "/state_dict_type"))
    for name in ("micro batch per GPU", "gradient accumulation steps", "gradient clipping"):
        plan[name] = Item(None, NOT_HERE)
    return plan


def plan_of(result: Explanation) -> dict[str, Item]:
    return fsdp_plan(result) if result.facts.get("backend") == "fsdp" else deepspeed_plan(result)


def plan_rows(left: Explanation, right: Explanation) -> list[tuple[str, Item, Item, bool]]:
    """(what, left, right, differs) for every shared notion; one the config does not hold differs from nothing."""
    a, b = plan_of(left), plan_of(right)
    return [(name, a[name], b[name], a[name].value != b[name].value and NOT_HERE not in (a[name].source,
                                                                                        b[name].source))
            for name in a]


def _shown(value) -> str:
    """A plan value in the text: a word, or what the config holds there, escaped."""
    if value is None:
        return "-"
    if value is True or value is False:
        return "yes" if value else "no"
    if isinstance(value, float) and not math.isfinite(value):
        from .render import _number_text
        return _number_text(value)  # as the table and the JSON write it
    if isinstance(value, (dict, list)):
        from ..values import brief
        return escape.inline(brief(value, 60))
    return escape.inline(str(value))


def plan_text(left: Explanation, right: Explanation, left_name: str, right_name: str) -> str:
    from .render import heading
    rows = plan_rows(left, right)
    width = max(len(name) for name, *_ in rows)
    lines = [escape.line(f"--- {left_name}: {heading(left)}"), escape.line(f"+++ {right_name}: {heading(right)}"),
             "", "The two configs use different backends; compared by what they do:", ""]
    for name, a, b, differs in rows:
        mark = "≠" if differs else " "
        lines.append(f"{mark} {name:<{width}}  - {_shown(a.value):<14} {escape.inline(a.source)}".rstrip())
        lines.append(f"  {'':<{width}}  + {_shown(b.value):<14} {escape.inline(b.source)}".rstrip())
    count = sum(1 for *_, differs in rows if differs)
    lines += ["", f"{count} of {len(rows)} differ."]
    return "\n".join(lines) + "\n"


def plan_dict(left: Explanation, right: Explanation) -> dict:
    from .render import _plain, as_dict
    return {"left": as_dict(left), "right": as_dict(right),
            "plan": [{"what": name, "left": _plain(a.value), "left_source": a.source, "right": _plain(b.value),
                      "right_source": b.source, "differs": differs}
                     for name, a, b, differs in plan_rows(left, right)]}


def plan_json(left: Explanation, right: Explanation) -> str:
    """`--format json`: JSON-safe values (a NaN clipping as "NaN"), escaped as render.dumps writes it."""
    from .render import dumps
    return dumps(plan_dict(left, right))
