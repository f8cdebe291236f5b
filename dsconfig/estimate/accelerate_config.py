"""What an Accelerate FSDP config (accelerate_config.yaml) says about memory.

Read as `accelerate launch` reads it (yaml.safe_load, then the launcher's defaults for what the
file leaves out: fsdp_version 1, FULL_SHARD, reshard_after_forward true, offload false,
cpu_ram_efficient_loading true; commands/launch.py), and as the plugin turns it into objects
(utils/dataclasses.py `FullyShardedDataParallelPlugin`: a strategy by name or number 1-5, booleans
through `str_to_bool`, FULL_STATE_DICT the FSDP1 default, SHARDED_STATE_DICT FSDP2's). A value the
plugin would refuse is a one-line error naming the file, line and column.
"""

from __future__ import annotations

from . import fsdp_memory, limits

PRECISIONS = {"no": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "bf16"}  # fp8 keeps bf16 autocast
_TRUE = ("y", "yes", "t", "true", "on", "1")  # accelerate.utils.str_to_bool
_FALSE = ("n", "no", "f", "false", "off", "0")


class ConfigError(ValueError):
    """The file cannot be read as an Accelerate FSDP config (one line)."""


def read(path: str) -> tuple[dict, list[str]]:
    """(values, notes): `fsdp` (an fsdp_memory.Fsdp), and `precision`, `gpus`, `nodes`,
    `gradient_checkpointing` where the file says them."""
    from ..files import FileError, read_text
    from ..yamldoc import YamlDocument
    try:
        text = read_text(path)
    except FileError as error:
        raise ConfigError(str(error)) from None
    document = YamlDocument(path, text)
    if not document.loaded:
        line, column = document.position(document.error.offset)
        raise ConfigError(f"{path}:{line}:{column}: not YAML that Accelerate can load: {document.error.message}")
    return _Reader(document).read()


class _Reader:
    def __init__(self, document):
        self.document = document
        self.notes: list[str] = []

    def fail(self, pointer: str, message: str):
        line, column = self.document.locate(pointer)
        raise ConfigError(f"{self.document.path}:{line}:{column}: {message}")

    def scalar(self, mapping: dict, key: str, default, pointer: str):
        """mapping[key], refused unless it is a scalar: a list or mapping (perhaps a YAML alias bomb) is
        never turned into text."""
        value = mapping.get(key, default)
        if isinstance(value, (list, dict)):
            self.fail(pointer, f"{key} is {limits.shown(value)}, not a single value")
        return value

    def read(self) -> tuple[dict, list[str]]:
        config = self.document.value
        if not isinstance(config, dict):
            self.fail("", "not an Accelerate config: the top level is not a mapping")
        kind = self.scalar(config, "distributed_type", None, "/distributed_type")
        if kind != "FSDP":
            shown = limits.shown(kind) if kind is not None else "missing"
            self.fail("/distributed_type", f"distributed_type is {shown}, not FSDP: `estimate --backend fsdp` reads "
                                            "Accelerate FSDP configs (estimate a DeepSpeed setup from its ds_config.json)")
        fsdp = config.get("fsdp_config", {})
        if fsdp is None:
            fsdp = {}
        if not isinstance(fsdp, dict):
            self.fail("/fsdp_config", "fsdp_config is not a mapping")
        values = {"fsdp": self._fsdp(fsdp)}
        precision = self.scalar(config, "mixed_precision", "no", "/mixed_precision")
        if precision is not None:
            word = str(precision).lower() if not isinstance(precision, bool) else None
            if word not in PRECISIONS:
                self.fail("/mixed_precision", f"mixed_precision {limits.shown(precision)} is not one of no, fp16, bf16, fp8 "
                                              "(`accelerate launch` raises \"Unknown mixed_precision mode\")")
            values["precision"] = PRECISIONS[word]
        machines = self._count(config, "num_machines", 1, limits.NODES)
        processes = self._count(config, "num_processes", machines,
                                limits.Limit(limits.GPUS_PER_NODE.most * machines, "processes", limits.GPUS_PER_NODE.why))
        if processes % machines:
            self.fail("/num_processes", f"num_processes {processes} is not a multiple of num_machines {machines} (it "
                                        "is the total over all machines)")
        values["gpus"], values["nodes"] = processes // machines, machines
        if self._flag(fsdp, "fsdp_activation_checkpointing", False):
            values["gradient_checkpointing"] = True
        return values, self.notes

    def _fsdp(self, fsdp: dict) -> fsdp_memory.Fsdp:
        version = self.scalar(fsdp, "fsdp_version", 1, "/fsdp_config/fsdp_version")
        if str(version) not in ("1", "2") or isinstance(version, bool):
            self.fail("/fsdp_config/fsdp_version", f"fsdp_version {limits.shown(version)} is not 1 or 2")
        version = int(str(version))
        if version == 1:
            strategy = self._strategy(self.scalar(fsdp, "fsdp_sharding_strategy", "FULL_SHARD",
                                                  "/fsdp_config/fsdp_sharding_strategy"))
        else:
            reshard = self._flag(fsdp, "fsdp_reshard_after_forward", True)
            strategy = "FULL_SHARD" if reshard else "SHARD_GRAD_OP"
            if "fsdp_sharding_strategy" in fsdp:
                self.notes.append("fsdp_sharding_strategy is not read by FSDP2 (fsdp_reshard_after_forward is)")
        wrap = str(self.scalar(fsdp, "fsdp_auto_wrap_policy", "NO_WRAP", "/fsdp_config/fsdp_auto_wrap_policy")).upper()
        if wrap not in ("TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP"):
            self.fail("/fsdp_config/fsdp_auto_wrap_policy", f"fsdp_auto_wrap_policy {limits.shown(wrap)} is not "
                                                           "TRANSFORMER_BASED_WRAP, SIZE_BASED_WRAP or NO_WRAP")
        if wrap == "SIZE_BASED_WRAP":
            self.notes.append("SIZE_BASED_WRAP: units estimated as one per transformer layer")
        state_dict = str(self.scalar(fsdp, "fsdp_state_dict_type", "FULL_STATE_DICT" if version == 1 else
                                     "SHARDED_STATE_DICT", "/fsdp_config/fsdp_state_dict_type"))
        return fsdp_memory.Fsdp(strategy=strategy, version=version,
                                offload_params=self._flag(fsdp, "fsdp_offload_params", False),
                                wrapped=wrap != "NO_WRAP",
                                full_state_dict=state_dict.upper() in ("FULL_STATE_DICT", "1"),
                                cpu_ram_efficient_loading=self._flag(fsdp, "fsdp_cpu_ram_efficient_loading", True))

    def _strategy(self, value) -> str:
        text = str(value).upper()
        if text.isdigit() and 1 <= int(text) <= len(fsdp_memory.STRATEGIES):
            return fsdp_memory.STRATEGIES[int(text) - 1]  # torch's ShardingStrategy values
        if text not in fsdp_memory.STRATEGIES or isinstance(value, bool):
            self.fail("/fsdp_config/fsdp_sharding_strategy",
                      f"fsdp_sharding_strategy {limits.shown(value)} is not one of {', '.join(fsdp_memory.STRATEGIES)} or 1-5")
        return text

    def _flag(self, fsdp: dict, key: str, default: bool) -> bool:
        value = self.scalar(fsdp, key, default, f"/fsdp_config/{key}")
        word = str(value).lower()  # the launcher writes str(value).lower() into the environment
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        self.fail(f"/fsdp_config/{key}", f"{key} {limits.shown(value)} is not a boolean (Accelerate's str_to_bool raises)")

    def _count(self, config: dict, key: str, default: int, limit: limits.Limit) -> int:
        value = config.get(key, default)
        if value is None:
            return default
        try:
            return limits.count(value, key, limit)
        except limits.LimitError as error:
            self.fail(f"/{key}", str(error))  # limits.count describes a list without expanding it
