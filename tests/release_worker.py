"""One DeepSpeed release as an oracle process: reads requests on stdin, answers on stdout.

Run with PYTHONPATH=<folder holding that release's deepspeed package> (see
scripts/deepspeed_releases.py); tests/releases.py starts and talks to it. Each request is one JSON
line, {"config": <dict or path>, "world": N}; each answer is {"ok": bool, "phase": "load" | "parse" |
null, "error": "Type: message" | null}, the same verdict tests/oracle.py gives for the installed
release. With "held": true in the request, an accepted config's answer also has "held": what the
DeepSpeedConfig object holds (`held()`, for dsconfig explain's effective config). The first line
written is {"version": "<the release's own version>"}.

Standalone on purpose (no pytest, no dsconfig; scripts/release_compat.py only): it runs inside
another release's import path.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import sys


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.remove(here)  # tests/deepspeed would shadow the release
    sys.path.append(os.path.join(os.path.dirname(here), "scripts"))
    from release_compat import restore_older_names
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # DeepSpeed logs to stdout; keep the protocol clean
    logging.disable(logging.CRITICAL)
    restore_older_names()
    import deepspeed
    import deepspeed.comm as ds_comm
    from deepspeed.runtime.config import DeepSpeedConfig
    try:
        from deepspeed.runtime.tensor_parallel.init_utils import load_ds_config
    except ImportError:  # before 0.16.x DeepSpeedConfig loads a path itself, the same way
        load_ds_config = None
    try:
        import deepspeed.runtime.swap_tensor.aio_config as aio_config
    except ImportError:
        aio_config = None

    class CudaAccelerator:  # dsconfig lints for a CUDA training machine (aio.use_gds asks)
        def __init__(self, real):
            self._real = real

        def device_name(self, *args):
            return "cuda"

        def __getattr__(self, name):
            return getattr(self._real, name)

    if aio_config is not None and hasattr(aio_config, "get_accelerator"):
        real = aio_config.get_accelerator()
        aio_config.get_accelerator = lambda: CudaAccelerator(real)
    answers.write(json.dumps({"version": deepspeed.__version__.strip()}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        size = request["world"]
        ds_comm.get_world_size = lambda group=None: size
        ds_comm.get_rank = lambda group=None: 0
        answers.write(json.dumps(verdict(request["config"], DeepSpeedConfig, load_ds_config,
                                         request.get("held", False))) + "\n")
    return 0


# DeepSpeedConfig attributes that are not the config: the input dict itself and the process group's view.
NOT_HELD = ("_param_dict", "world_size", "global_rank")


def held(config_object) -> dict:
    """Every attribute of a DeepSpeedConfig as JSON values: pydantic models dumped, other objects by
    their attributes (with their class), torch dtypes and enums by name."""
    return {name: _plain(value, 0) for name, value in vars(config_object).items() if name not in NOT_HELD}


def _plain(value, depth: int):
    if depth > 30:
        return repr(value)
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(), depth + 1)
    if isinstance(value, dict):
        return {str(key): _plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, depth + 1) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if hasattr(value, "__dict__") and not callable(value):
        return {"(class)": type(value).__name__, **_plain(vars(value), depth + 1)}
    return repr(value)  # torch.float16, ...


def verdict(config, config_class, load_ds_config, want_held: bool = False) -> dict:
    if isinstance(config, str) and load_ds_config is not None:
        try:
            config = load_ds_config(config)
        except Exception as error:
            return {"ok": False, "phase": "load", "error": _text(error)}
    try:
        built = config_class(config)
    except Exception as error:
        text = _text(error)
        loading = isinstance(config, str) and type(error).__name__ in ("HjsonDecodeError", "ValueError") \
            and "Expected a string path" not in text
        removed = type(error).__name__ == "DeepSpeedConfigError" and "removed" in str(error)
        return {"ok": False, "phase": "load" if loading or removed else "parse", "error": text}
    if want_held:
        return {"ok": True, "phase": None, "error": None, "held": held(built)}
    return {"ok": True, "phase": None, "error": None}


def _text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


if __name__ == "__main__":
    sys.exit(main())
