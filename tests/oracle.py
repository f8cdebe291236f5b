"""The real DeepSpeed as an oracle: what does DeepSpeedConfig say about a config at a world size?

Imported only by tests. `deepspeed.initialize` loads a config path with hjson and then builds
`DeepSpeedConfig(dict)` inside a process group; we do the same, with the world size patched in.
"""

from __future__ import annotations

import contextlib
import logging
from typing import NamedTuple

import pytest

deepspeed = pytest.importorskip("deepspeed")
import deepspeed.comm as ds_comm  # noqa: E402
from deepspeed.runtime.config import DeepSpeedConfig  # noqa: E402
from deepspeed.runtime.tensor_parallel.init_utils import load_ds_config  # noqa: E402

logging.getLogger("DeepSpeed").setLevel(logging.CRITICAL)
logging.getLogger("deepspeed").setLevel(logging.CRITICAL)


class Verdict(NamedTuple):
    ok: bool
    phase: str | None  # "load" | "parse" | None
    error: str | None  # "ExceptionType: message"


class _CudaAccelerator:
    """What `aio.use_gds` asks of the accelerator: dsconfig lints for a CUDA training machine."""

    def __init__(self, real):
        self._real = real

    def device_name(self, *args):
        return "cuda"

    def __getattr__(self, name):
        return getattr(self._real, name)


@contextlib.contextmanager
def world(size: int):
    """Pretend torch.distributed runs `size` processes on CUDA GPUs and we are rank 0."""
    import deepspeed.runtime.swap_tensor.aio_config as aio_config
    saved = ds_comm.get_world_size, ds_comm.get_rank, aio_config.get_accelerator
    real = aio_config.get_accelerator()
    ds_comm.get_world_size = lambda group=None: size
    ds_comm.get_rank = lambda group=None: 0
    aio_config.get_accelerator = lambda: _CudaAccelerator(real)
    try:
        yield
    finally:
        ds_comm.get_world_size, ds_comm.get_rank, aio_config.get_accelerator = saved


def _text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def verdict(config, world_size: int) -> Verdict:
    """`config` is a path (loaded as deepspeed.initialize loads it) or a dict (as HF hands it over)."""
    if isinstance(config, str):
        try:
            config = load_ds_config(config)
        except Exception as error:
            return Verdict(False, "load", _text(error))
    with world(world_size):
        try:
            DeepSpeedConfig(config)
        except Exception as error:
            phase = "load" if type(error).__name__ == "DeepSpeedConfigError" and "removed" in str(error) else "parse"
            return Verdict(False, phase, _text(error))
    return Verdict(True, None, None)
