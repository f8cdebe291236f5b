"""`dsconfig explain accelerate_fsdp.yaml`: the settings Accelerate's FSDP plugin ends up with.

`accelerate launch` exports the YAML's `fsdp_config` (and its own flags) as FSDP_* variables;
`FullyShardedDataParallelPlugin.__post_init__` reads them back (dsconfig.accelerate.fsdp_plugin replays
it, differential-tested against the real plugin). Each field is shown with the YAML line or flag that
set it, or as the plugin's default; the run's mixed precision comes from ACCELERATE_MIXED_PRECISION.
"""

from __future__ import annotations

import enum

from ..accelerate import fsdp, fsdp_plugin
from ..pointers import pointer_join
from ..values import py_str
from .ledger import ACCELERATE, DEFAULT, FLAG, YAML, Entry, Origin


def plugin_settings(replay, origin_at, flags: dict) -> tuple[dict, dict, list[str]]:
    """(settings by plugin field, sources by JSON pointer, what the plugin raises) for a launch replay."""
    result = fsdp_plugin.replay({}, fsdp.launcher_env(replay.args))
    settings, sources = {}, {}
    for field_name, value in result.values.items():
        if field_name == "mixed_precision_policy":
            continue
        settings[field_name] = _plain(value)
        option = fsdp.OPTION_OF_FIELD.get(field_name, field_name)
        pointer = pointer_join("", field_name)
        if option in flags:
            origin = Origin(FLAG, f"accelerate launch --{option} {flags[option]}")
        elif option in replay.source:
            origin = origin_at(replay.source[option])._replace(kind=YAML, detail=option)
        else:
            origin = Origin(DEFAULT, f"FullyShardedDataParallelPlugin's default (Accelerate, FSDP{result.version})")
        sources[pointer] = Entry(settings[field_name], origin)
    mixed = py_str(replay.args.get("mixed_precision") or "no").lower()
    settings["mixed_precision"] = mixed
    if "mixed_precision" in flags:
        origin = Origin(FLAG, f"accelerate launch --mixed_precision {flags['mixed_precision']}")
    elif "mixed_precision" in replay.source and replay.fields.get("mixed_precision") is not None:
        origin = origin_at(replay.source["mixed_precision"])._replace(kind=YAML, detail="mixed_precision")
    else:
        origin = Origin(ACCELERATE, "no mixed precision (accelerate launch's default)")
    sources["/mixed_precision"] = Entry(mixed, origin)
    failed = [f"FullyShardedDataParallelPlugin raises {text}" for _, _, text in result.raised]
    return settings, sources, failed


def _plain(value):
    if isinstance(value, enum.Enum):
        return value.name.lstrip("_")
    if isinstance(value, tuple):
        return list(value)
    return value
