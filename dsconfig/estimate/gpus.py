"""GPU catalog: memory as the driver reports it, and whether the GPU computes in bf16.

`memory_mib` is nvidia-smi's `memory.total` (MiB, ECC on where the card has it), the figure the
driver gives for the whole device; the CUDA context and other overhead are taken from it by the
estimate, not here. bf16 needs compute capability 8.0 (Ampere) or later: DeepSpeed and the HF
Trainer refuse bf16 on V100 and T4.

Values were read from nvidia-smi output of each card.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .limits import MEMORY, too_large

MIB = 1 << 20
GIB = 1 << 30


class Gpu(NamedTuple):
    name: str
    memory_mib: int
    bf16: bool
    description: str
    nominal_gb: int = 0  # the size on the box and in the name ("96 GB"); 0 when the card is not in the catalog

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MIB


_GPUS = [
    Gpu("H100-80GB", 81559, True, "NVIDIA H100 80GB HBM3 (SXM) / H100 PCIe", 80),
    Gpu("H100-NVL-94GB", 95830, True, "NVIDIA H100 NVL", 94),
    Gpu("H800-80GB", 81559, True, "NVIDIA H800", 80),
    Gpu("H200-141GB", 143771, True, "NVIDIA H200", 141),
    Gpu("H20-96GB", 97871, True, "NVIDIA H20", 96),
    Gpu("GH200-96GB", 97871, True, "NVIDIA GH200 (GPU memory)", 96),
    Gpu("B200-180GB", 183359, True, "NVIDIA B200", 180),
    Gpu("A100-80GB", 81920, True, "NVIDIA A100-SXM4-80GB / A100 80GB PCIe", 80),
    Gpu("A100-40GB", 40960, True, "NVIDIA A100-SXM4-40GB / A100-PCIE-40GB", 40),
    Gpu("A800-80GB", 81920, True, "NVIDIA A800", 80),
    Gpu("L40S", 46068, True, "NVIDIA L40S (48 GB)", 48),
    Gpu("L40", 46068, True, "NVIDIA L40 (48 GB)", 48),
    Gpu("L4", 23034, True, "NVIDIA L4 (24 GB)", 24),
    Gpu("A10", 23028, True, "NVIDIA A10 / A10G (24 GB, ECC on)", 24),
    Gpu("A6000", 49140, True, "NVIDIA RTX A6000 (48 GB)", 48),
    Gpu("RTX-PRO-6000", 97887, True, "NVIDIA RTX PRO 6000 Blackwell (96 GB)", 96),
    Gpu("RTX4090", 24564, True, "NVIDIA GeForce RTX 4090 (24 GB)", 24),
    Gpu("RTX3090", 24576, True, "NVIDIA GeForce RTX 3090 (24 GB)", 24),
    Gpu("V100-32GB", 32768, False, "Tesla V100-SXM2-32GB / V100-PCIE-32GB", 32),
    Gpu("V100-16GB", 16384, False, "Tesla V100-PCIE-16GB / V100-SXM2-16GB", 16),
    Gpu("T4", 15360, False, "Tesla T4 (16 GB)", 16),
]

GPUS = {gpu.name: gpu for gpu in _GPUS}
# Other spellings people use for the same card.
ALIASES = {"H100": "H100-80GB", "H100-SXM": "H100-80GB", "H100-PCIE": "H100-80GB", "H200": "H200-141GB",
           "H20": "H20-96GB", "H800": "H800-80GB", "B200": "B200-180GB", "A100": "A100-80GB",
           "A800": "A800-80GB", "A10G": "A10", "RTX-A6000": "A6000", "V100": "V100-32GB", "GH200": "GH200-96GB",
           "4090": "RTX4090", "3090": "RTX3090", "RTX-4090": "RTX4090", "RTX-3090": "RTX3090"}


def _key(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.strip().upper())


def lookup(name: str) -> Gpu | None:
    """The GPU for a name: `H100-80GB`, `h100`, `A100 40GB`, `rtx4090`... (None if unknown)."""
    key = _key(name)
    for gpu in _GPUS:
        if _key(gpu.name) == key or _key(gpu.name).replace("-", "") == key.replace("-", ""):
            return gpu
    alias = {_key(k).replace("-", ""): v for k, v in ALIASES.items()}.get(key.replace("-", ""))
    return GPUS[alias] if alias else None


_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB|K|M|G|T)?\s*", re.IGNORECASE)
_UNITS = {"B": 1, "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12, "K": 1 << 10, "M": 1 << 20,
          "G": 1 << 30, "T": 1 << 40, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


def parse_memory_size(text: str) -> int:
    """A memory size (--gpu-mem, --cpu-mem): `80GiB` or `80G` -> 80·2³⁰, a bare number -> GiB (`80` = 80
    GiB), `1TB` -> 10¹² bytes.

    For --gpu-mem, a size printed on a card's box (`96GB`, `96`) is first looked up as the catalog's
    usable memory of such cards (nominal_card); what no card has is read here, GB as GiB: "GB" on a GPU
    means binary gigabytes. Compare dsconfig.files.parse_file_size, where every unit is a power of 1024.
    """
    match = _SIZE.fullmatch(str(text))
    if not match:
        raise ValueError(f"cannot read {text!r} as a memory size (use e.g. 80GB, 79.2GiB or 512G)")
    value = float(match.group(1))
    unit = (match.group(2) or "GIB").upper()
    unit = "GIB" if unit == "GB" else unit  # memory is sold in binary gigabytes (an "80GB" A100 has 80 GiB)
    if value * _UNITS[unit] > MEMORY.most:  # infinity too: 400 digits are more than a float holds
        written = text.strip() if len(text.strip()) <= 30 else text.strip()[:27] + "..."
        raise ValueError(too_large(f"{written} is more memory than any machine has", MEMORY))
    size = int(value * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"memory size must be positive, got {text!r}")
    return size


_NOMINAL = re.compile(r"\s*([0-9]+)\s*(GB)?\s*", re.IGNORECASE)


def nominal_card(text: str) -> Gpu | None:
    """The card a size as printed on the box means (`96GB`, or a bare `96`), when the catalog has cards of
    that size: the memory is the least usable memory among them (H20, GH200 and RTX PRO 6000 for 96 GB),
    so the plan fits each of them. None for any other size or unit (`96GiB` is exactly 96 GiB)."""
    match = _NOMINAL.fullmatch(str(text))
    if not match:
        return None
    size = int(match.group(1))
    cards = [gpu for gpu in _GPUS if gpu.nominal_gb == size]
    if not cards:
        return None
    least = min(cards, key=lambda gpu: gpu.memory_mib)
    names_ = ", ".join(gpu.name for gpu in cards)
    return Gpu(f"a {size} GB card", least.memory_mib, all(gpu.bf16 for gpu in cards),
               f"the usable memory of a {size} GB card ({names_} in the catalog; the least of them)", size)


def this_machine_memory() -> int | None:
    """Bytes of RAM of the machine dsconfig runs on (None where the system does not say)."""
    import os
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # Windows, or a name this system lacks
        return None


def names() -> list[str]:
    return [gpu.name for gpu in _GPUS]
