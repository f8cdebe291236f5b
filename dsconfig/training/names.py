"""Which keys hold a batch size, and whether it is per device or global.

Projects name them freely (`batch_size`, `train_bs`, `micro_batch_size`, `batch_size_per_gpu`,
`global_batch_size`, ...). The name decides the default; `--batch-key POINTER=per-device|global`
(or `batch-keys` in [tool.dsconfig]) overrides it for one key. Plain `batch_size` is what one
process's DataLoader gets in PyTorch projects (Lightning, torchrun, Accelerate), and the global
batch split over the devices in JAX ones.
"""

from __future__ import annotations

import re

PER_DEVICE = "per-device"
GLOBAL = "global"
KINDS = (PER_DEVICE, GLOBAL)

# a batch size, by the whole key (lower case): batch_size, train_batch_size, batchsize, train_bs, bs, mbs, gbs
_BATCH = re.compile(r"^(?:[a-z0-9]+_)*(?:batch_?size|bs|mbs|gbs)(?:_per_(?:gpu|device|rank|process|node|core))?$")
# `train_batch_size` is global in DeepSpeed but per device in diffusers' and many HF example scripts:
# outside a ds_config.json it is per device (a wrong "global" would raise false divisibility errors)
_GLOBAL = re.compile(r"(?:^|_)(?:global|total|effective|overall)_|^gbs$")
_PER_DEVICE = re.compile(r"_per_(?:gpu|device|rank|process|core)$|^(?:per_device|per_gpu|local|micro|mbs)"
                         r"|(?:^|_)micro_")
_NOT_A_SIZE = re.compile(r"^(?:max|min|auto_find|find|use|num|n)_|_(?:type|mode|sampler|strategy|scale|multiplier|"
                         r"factor|ratio|fn|name|step|steps)$")


def is_batch_key(key: str) -> bool:
    """A key whose value is a number of samples per step (not `max_batch_size`, `num_batches`, `bs_type`)."""
    key = key.lower()
    return bool(_BATCH.match(key)) and not _NOT_A_SIZE.search(key)


def default_kind(key: str, framework: str | None = None) -> str:
    """per-device or global from the key's name alone; plain `batch_size` is global under JAX."""
    key = key.lower()
    if _GLOBAL.search(key):
        return GLOBAL
    if _PER_DEVICE.search(key):
        return PER_DEVICE
    return GLOBAL if framework == "jax" else PER_DEVICE


def parse_batch_key(text: str) -> tuple[str, str]:
    """`/data/train_bs=per-device` or `data.train_bs=global` -> (JSON pointer, kind); ValueError otherwise."""
    where, sep, kind = text.rpartition("=")
    kind = kind.strip()
    where = where.strip()
    if not sep or not where or kind not in KINDS:
        raise ValueError(f"{text!r}: write POINTER=per-device or POINTER=global, e.g. /data/train_bs=per-device")
    if not where.startswith("/"):
        where = "/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in where.split("."))
    return where, kind
