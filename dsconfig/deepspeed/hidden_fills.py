"""The HF Trainer's hidden-size fills: the numbers it writes over three ZeRO "auto" values.

transformers 5.23 `HfTrainerDeepSpeedConfig.trainer_config_finalize` takes h from the model's
config (`hidden_size`, else max(`hidden_sizes`), else the same two in `text_config`) and fills
"auto" in zero_optimization.reduce_bucket_size with h², and, only when the config's
zero_optimization.stage is 3, stage3_prefetch_bucket_size with int(0.9·h²) and
stage3_param_persistence_threshold with 10·h. When one of the three is "auto" and the config has no
h, it raises the ValueError in NO_HIDDEN_SIZE. tests/deepspeed/test_hidden_fills.py runs the real
method on the same configs.
"""

from __future__ import annotations

from ..accelerate.model_layers import hidden_size_alias

REDUCE_BUCKET = "zero_optimization.reduce_bucket_size"
PREFETCH_BUCKET = "zero_optimization.stage3_prefetch_bucket_size"
PERSISTENCE_THRESHOLD = "zero_optimization.stage3_param_persistence_threshold"
HIDDEN_SIZE_KEYS = (REDUCE_BUCKET, PREFETCH_BUCKET, PERSISTENCE_THRESHOLD)
# key -> (how, in words; the value from h). The Trainer and Accelerate's prepare() compute the same three.
FORMULAS = {REDUCE_BUCKET: ("hidden_size²", lambda h: h * h),
            PREFETCH_BUCKET: ("int(0.9 × hidden_size²)", lambda h: int(0.9 * h * h)),
            PERSISTENCE_THRESHOLD: ("10 × hidden_size", lambda h: 10 * h)}

# trainer_config_finalize's message, word for word; {keys} is the Python list of the "auto" keys.
NO_HIDDEN_SIZE = ("The model's config file has neither `hidden_size` nor `hidden_sizes` entry, therefore it's not "
                  "possible to automatically fill out the following `auto` entries in the DeepSpeed config file: "
                  "{keys}. You can fix that by replacing `auto` values for these keys with an integer value of your "
                  "choice.")


MAX_HIDDEN_SIZE = 2**31


class NoHiddenSize(ValueError):
    """The Trainer needs h for these "auto" keys and the model config has none (its message is str(self))."""

    def __init__(self, keys: list[str]):
        super().__init__(NO_HIDDEN_SIZE.format(keys=keys))
        self.keys = keys


def _attribute(model_config: dict, name: str):
    """model.config.<name> as transformers reads it: the key, or the key its attribute_map names instead."""
    if name in model_config:
        return True, model_config[name]
    alias = hidden_size_alias(model_config.get("model_type"), name)
    if alias is not None and alias in model_config:
        return True, model_config[alias]
    return False, None


def _largest(sizes) -> int | None:
    numbers = [size for size in sizes if _is_int(size)] if isinstance(sizes, list) else []
    return max(numbers) if numbers and len(numbers) == len(sizes) else None


def _is_int(value) -> bool:
    """A whole number a model could have as its width: a config.json holding a 4,000-digit one gets None, not a
    square no message can print (Python refuses to write ints past 4,300 digits)."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < MAX_HIDDEN_SIZE


def hidden_size_of(model_config: dict) -> int | None:
    """The h trainer_config_finalize takes from a model's config.json (None when it finds none, or finds
    something other than whole numbers below 2**31)."""
    if not isinstance(model_config, dict):
        return None
    text_config = model_config.get("text_config")
    for where in (model_config, text_config if isinstance(text_config, dict) else None):
        if where is None:
            continue
        found, value = _attribute(where, "hidden_size")
        if found:
            return value if _is_int(value) else None
        found, value = _attribute(where, "hidden_sizes")
        if found:
            return _largest(value)
    return None


def _value(config: dict, dotted: str):
    node = config
    *parents, key = dotted.split(".")
    for parent in parents:
        node = node.get(parent) if isinstance(node, dict) else None
    return node.get(key) if isinstance(node, dict) else None


def bucket_fills(config: dict, hidden_size: int | None) -> list[tuple[str, object]]:
    """(dotted key, value) for each of the three "auto" values the Trainer fills from h, in its order.

    Raises NoHiddenSize (the Trainer's own message) when one is "auto" and `hidden_size` is None."""
    if not isinstance(config, dict):
        return []
    autos = [key for key in HIDDEN_SIZE_KEYS if _value(config, key) == "auto"]
    if not autos:
        return []
    if hidden_size is None:
        raise NoHiddenSize(autos)
    filled = HIDDEN_SIZE_KEYS if _value(config, "zero_optimization.stage") == 3 else (REDUCE_BUCKET,)
    return [(key, FORMULAS[key][1](hidden_size)) for key in filled if key in autos]


def accelerate_hidden_size(model_config: dict) -> int | None:
    """The h Accelerate's prepare() takes for the same fills (at every stage): model.config.hidden_size, else
    max(hidden_sizes); unlike the Trainer it never looks into text_config."""
    if not isinstance(model_config, dict):
        return None
    found, value = _attribute(model_config, "hidden_size")
    if found:
        return value if _is_int(value) else None
    found, value = _attribute(model_config, "hidden_sizes")
    return _largest(value) if found else None
