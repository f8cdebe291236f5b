"""The real Accelerate 1.15 FSDP path, run on CPU for the FSDP tests: the launcher's environment and the plugin."""

from __future__ import annotations

import logging
import os
import warnings

from tests.conftest import quiet_and_restored


def real_launch(path: str):
    """(args, environment) that `accelerate launch --config_file path` builds for an FSDP run (no process)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env

    with quiet_and_restored():
        args, _, _ = _validate_launch_command(launch_command_parser().parse_args(["--config_file", path, "x.py"]))
        return args, prepare_multi_gpu_env(args)


def build_plugin(kwargs: dict, env: dict, monkeypatch):
    """(plugin or None, the exception text or None, what Accelerate logged) of FullyShardedDataParallelPlugin(**kwargs)
    with exactly `env` as the FSDP_* environment. The one question about the machine, the accelerator lookup of
    sync_module_states, is answered as on a GPU machine (this one has none)."""
    import torch
    from accelerate.utils import dataclasses

    monkeypatch.setattr(dataclasses, "is_cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for name in [k for k in os.environ if k.startswith("FSDP_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger(dataclasses.__name__)
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plugin = dataclasses.FullyShardedDataParallelPlugin(**kwargs)
    except Exception as error:  # noqa: BLE001 - whatever the plugin raises is the verdict
        return None, f"{type(error).__name__}: {error}", ""
    finally:
        logger.removeHandler(handler)
        for name in [k for k in os.environ if k.startswith("FSDP_")]:
            monkeypatch.delenv(name)
    return plugin, None, " ".join(record.getMessage() for record in records)
