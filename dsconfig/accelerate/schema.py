"""The generated Accelerate JSON Schema (schemas/accelerate.schema.json) and the lookups the checks need.

scripts/build_accelerate_schema.py writes it from the installed Accelerate; this module only
reads it with json.load (the lint path imports neither accelerate nor jsonschema).
"""

from __future__ import annotations

from functools import lru_cache


SCHEMA_FILE = "accelerate.schema.json"
CLUSTER = "ClusterConfig"
SAGEMAKER = "SageMakerConfig"
SECTIONS = ("deepspeed_config", "fsdp_config", "fp8_config", "dynamo_config", "parallelism_config",
            "megatron_lm_config", "mpirun_config")


@lru_cache(maxsize=1)
def load() -> dict:
    # Both schemas live in the same folder (schemas/ in a checkout, dsconfig/schemas in a wheel).
    from .. import package_data
    return package_data.schema_json(SCHEMA_FILE)


def version() -> str:
    return load().get("x-accelerate-version", "")


def config_class(name: str) -> dict:
    return load()["definitions"][name]


def fields(name: str) -> dict[str, dict]:
    """Top-level keys of a config class (dataclass fields plus the legacy keys loading migrates)."""
    return config_class(name)["properties"]


def field_order(name: str) -> list[str]:
    """Dataclass field order: the order `accelerate launch` copies them onto its namespace."""
    return config_class(name)["x-accelerate-field-order"]


def required(name: str) -> list[str]:
    return config_class(name)["required"]


def enum(name: str, key: str) -> list:
    return [v for v in fields(name)[key].get("enum", ()) if v is not None]


def section(name: str) -> dict:
    return load()["definitions"][name]


def section_options(name: str) -> dict[str, dict]:
    """Launch option name -> schema, for the keys `accelerate launch` reads from this sub-dict."""
    return {key: prop for key, prop in section(name)["properties"].items() if "x-accelerate-alias-of" not in prop}


def launch_name(section_name: str, key) -> str:
    """The launch option a sub-dict key lands on (`_validate_launch_command`'s prefix rules)."""
    rule = section(section_name).get("x-accelerate-prefix") if section_name in SECTIONS else None
    if rule and isinstance(key, str) and not key.startswith(rule["startswith"]):
        return rule["prefix"] + key
    return key


def launch_defaults() -> dict:
    """The `accelerate launch` namespace before the config file is applied."""
    return load()["x-accelerate-launch-defaults"]
