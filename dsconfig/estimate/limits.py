"""The largest model, batch and cluster `dsconfig estimate` and `dsconfig generate` take, and the one
check every count from a config.json or the command line goes through.

Each bound sits far above anything trained, so no real input meets it; what it stops is a typo or a
hostile file, whose answer would mean nothing and whose arithmetic would overflow the floats the
memory figures pass through (past 1.8e308). The work itself does not grow with the sizes: a layer
kind is counted once with its number of layers (shapes._module_params, activations._Parts).

Standard library only: this module is on the fast `dsconfig estimate` path.
"""

from __future__ import annotations

import math
from typing import NamedTuple


class Limit(NamedTuple):
    most: int
    unit: str  # what is counted, plural ("layers")
    why: str  # what the bound is measured against
    written: str = ""  # `most` with its unit, when "1 EiB" reads better than 19 digits


PARAMETERS = Limit(10 ** 14, "parameters", "sixty times the largest model published (Switch-C: 1.6 trillion)")
LAYERS = Limit(10_000, "layers",
               "ten times the deepest transformer trained (DeepNet: 1,000 layers; Llama 3.1 405B has 126)")
WIDTH = Limit(1 << 20, "", "fourteen times the widest layer of a published model (PaLM 540B's MLP: 73,728)")
VOCABULARY = Limit(1 << 24, "tokens", "sixty-five times Gemma 2's vocabulary of 256,000 tokens")
EXPERTS = Limit(1 << 16, "experts", "thirty times Switch-C's 2,048 experts per layer")
SEQUENCE = Limit(1 << 30, "tokens", "a hundred times the longest context trained (Llama 4 Scout: 10 million)")
MICRO_BATCH = Limit(1 << 30, "samples", "no GPU holds the activations of a billion samples")
GLOBAL_BATCH = Limit(1 << 30, "samples", "half a million times the 2,048 sequences of a Llama 3 405B step")
GPUS_PER_NODE = Limit(1 << 16, "GPUs", "nine hundred times the 72 GPUs of the largest single system (GB200 NVL72)")
NODES = Limit(1 << 17, "nodes", "more than the GPUs of the largest clusters built (about 100,000)")
MEMORY = Limit(1 << 60, "bytes", "four million times the largest GPU (288 GB)", "1 EiB")


class LimitError(ValueError):
    """A count that is not an integer, below its least value, or past its Limit; one line."""


def count(value, name: str, limit: Limit, least: int = 1) -> int:
    """`value` as a count named `name`: an int (not a bool, not a float even when whole) in
    [least, limit.most]. Raises LimitError saying which of these it is not."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and isinstance(value, float) and not math.isfinite(value):
        number = False  # NaN and Infinity are not sizes at all
    if number and value > limit.most:
        raise LimitError(too_large(f"{name} is {shown(value)}", limit))  # 1e12 as well: its size is the problem
    if isinstance(value, float) and number and value.is_integer() and value >= least:
        raise LimitError(f"{name} must be an integer, not {shown(value)}: write {int(value)}")
    if not number or not isinstance(value, int) or value < least:
        kind = "a positive integer" if least == 1 else "a non-negative integer"
        raise LimitError(f"{name} must be {kind}, not {shown(value)}")
    return value


def too_large(subject: str, limit: Limit) -> str:
    """`subject` ("num_hidden_layers is 1000000000000") and what it exceeds, with why that is enough."""
    bound = limit.written or (f"{limit.most:,} {limit.unit}" if limit.unit else f"{limit.most:,}")
    return f"{subject}, more than {bound}, {limit.why}"


def shown(value) -> str:
    """A value as JSON writes it (NaN, Infinity, true, "8"), shortened when it is a 400-digit number."""
    import json

    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 30:
        try:
            return f"a {len(str(abs(value)))}-digit number"
        except ValueError:  # past the 4,300 digits Python writes out
            return "a number of more than 4,300 digits"
    if isinstance(value, (list, dict)):
        return "a JSON array" if isinstance(value, list) else "a JSON object"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
