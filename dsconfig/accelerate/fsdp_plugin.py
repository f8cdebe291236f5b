"""Replay `FullyShardedDataParallelPlugin.__post_init__` (Accelerate 1.15) without torch.

The plugin takes each setting from its keyword arguments (`kwargs`, as the HF Trainer passes them)
or, when that is None, from the FSDP_* environment `accelerate launch` writes (`env`). This module
runs the same statements, in the same order, on the same Python values, with stand-ins for the
torch enums (same names and numbers, so `ShardingStrategy(0)` and `ShardingStrategy["X"]` raise the
same ValueError and KeyError) and for the offload and mixed-precision classes. Every statement that
raises in the plugin becomes a Finding at `where(field)` (fails_in "initialize"), and the replay
carries on with the field's default so that one run reports every bad field. The FSDP2 deprecation
warnings (a setting dropped) become warnings, and `prepare()`'s layer-class lookup is checked as
far as it can be without the model (a name that cannot be a class name is never found).

Left out because they depend on the machine: the torch version check, and the device lookup that
`sync_module_states` makes (it raises on a machine without an accelerator).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from ..findings import Finding
from ..phases import INITIALIZE, SILENT
from ..rules.fsdp import (
    FSDP1_KEY_UNDER_FSDP2,
    FSDP2_LOCAL_STATE_DICT,
    FSDP_CHECKPOINTING_OFFLOAD,
    FSDP_CHOICE,
    FSDP_FLAG,
    FSDP_LAYER_CLASS_FORMAT,
    FSDP_MIN_NUM_PARAMS,
    FSDP_VERSION,
)
from ..values import closest, py_str

# accelerate.utils.constants
SHARDING_STRATEGY_NAMES = ["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"]
AUTO_WRAP_POLICIES = ["TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP"]
BACKWARD_PREFETCH_NAMES = ["BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"]
STATE_DICT_TYPES = ["FULL_STATE_DICT", "LOCAL_STATE_DICT", "SHARDED_STATE_DICT"]
PRECISIONS = ["fp8", "fp16", "bf16", "fp32"]  # set_mixed_precision's mapping
TRUE_WORDS = ("y", "yes", "t", "true", "on", "1")
FALSE_WORDS = ("n", "no", "f", "false", "off", "0")


# torch.distributed.fsdp's enums: plain enum.Enum with these names and values (torch 2.13).
class ShardingStrategy(enum.Enum):
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class BackwardPrefetch(enum.Enum):
    BACKWARD_PRE = 1
    BACKWARD_POST = 2


class StateDictType(enum.Enum):
    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


class _Offload:  # CPUOffload (FSDP1) / OffloadPolicy, CPUOffloadPolicy (FSDP2)
    def __init__(self, version: int, on: bool):
        self.version, self.on = version, on


def str_to_bool(value, to_bool: bool = False):
    """accelerate.utils.environment.str_to_bool."""
    value = value.lower()
    if value in TRUE_WORDS:
        return True if to_bool else 1
    if value in FALSE_WORDS:
        return False if to_bool else 0
    raise ValueError(f"invalid truth value {value}")


class _Raised(Exception):
    """A statement of the plugin raised: the field it was about and the exception."""

    def __init__(self, field_name: str, error: BaseException, rule=None):
        super().__init__(field_name)
        self.field, self.error, self.rule = field_name, error, rule


@dataclass
class PluginReplay:
    """The plugin's settings after __post_init__, and what it said on the way.

    `values` holds each field as the plugin leaves it (enum members by name, offload as a bool);
    `read` the FSDP_* variables it read; `raised` (field, rule, text); `dropped` (field, warning).
    """

    values: dict = field(default_factory=dict)
    read: set = field(default_factory=set)
    raised: list = field(default_factory=list)
    dropped: list = field(default_factory=list)
    odd_version: bool = False  # neither 1 nor 2: the plugin takes neither version's branches

    @property
    def version(self):
        return self.values.get("fsdp_version")


def replay(kwargs: dict, env: dict[str, str]) -> PluginReplay:
    """Run the plugin's __post_init__ on (kwargs, env)."""
    return _Plugin(kwargs, env).run()


def plugin_findings(kwargs: dict, env: dict[str, str], where: Callable[[str], str]) -> list[Finding]:
    """Findings for what `FullyShardedDataParallelPlugin(**kwargs)` does in a process whose FSDP_*
    environment is `env`; `where(field)` is the JSON pointer to report a plugin field at."""
    return findings_of(replay(kwargs, env), where)


def findings_of(result: PluginReplay, where: Callable[[str], str]) -> list[Finding]:
    findings = []
    if result.odd_version:
        findings.append(Finding(FSDP_VERSION, f"fsdp_version {_py(result.version)} is neither 1 nor 2: the plugin "
                                              "skips both versions' branches (FSDP1's sharding strategy is never read) "
                                              "and prepare() wraps the model as FSDP1; write 1 or 2",
                                where("fsdp_version"), fails_in=SILENT))
    for field_name, rule, text in result.raised:
        message = text if rule is FSDP_LAYER_CLASS_FORMAT else f"the FSDP plugin fails in every process: {text}"
        findings.append(Finding(rule, message, where(field_name), fails_in=INITIALIZE))
    for field_name, text in result.dropped:
        findings.append(Finding(FSDP1_KEY_UNDER_FSDP2, f"under FSDP2 the plugin drops {field_name}: Accelerate logs "
                                                       f"\"{text}\"{_fsdp2_form(field_name)}",
                                where(field_name), fails_in=SILENT))
    return findings


_FSDP2_FORMS = {  # accelerate.commands.to_fsdp2's mapping
    "sharding_strategy": "; FSDP2 spells it reshard_after_forward: true (FULL_SHARD, HYBRID_SHARD) or false",
    "backward_prefetch": "; FSDP2 always prefetches: remove it",
    "use_orig_params": "; FSDP2 always uses the original parameters: remove it",
    "sync_module_states": "; FSDP2 does not need it: remove it",
}


def _fsdp2_form(field_name: str) -> str:
    return _FSDP2_FORMS.get(field_name, "")


class _Plugin:
    def __init__(self, kwargs: dict, env: dict[str, str]):
        self.kw = dict(kwargs)
        self.env = env
        self.result = PluginReplay()

    def fail(self, field_name: str, rule, text: str) -> None:
        self.result.raised.append((field_name, rule, text))

    def drop(self, field_name: str, text: str) -> None:
        self.result.dropped.append((field_name, text))

    def getenv(self, name: str, default=None):
        self.result.read.add(name)
        return self.env.get(name, default)

    def get(self, name):
        return self.kw.get(name)

    def step(self, rule, field_name: str, compute, default=None):
        """Run one statement; on an exception record it and leave the field at `default`."""
        try:
            return compute()
        except _Raised as raised:
            self.fail(raised.field, raised.rule or rule, _text(raised.error))
        except Exception as error:  # noqa: BLE001 - whatever the plugin's statement raised, it raises here too
            hint = _did_you_mean(error.args[0], _NAMES.get(field_name, [])) if isinstance(error, KeyError) else ""
            self.fail(field_name, rule, _text(error) + hint)
        return default

    def run(self) -> PluginReplay:
        values = self.result.values
        version = self.get("fsdp_version")
        if version is None:
            version = self.step(FSDP_VERSION, "fsdp_version", lambda: int(self.getenv("FSDP_VERSION", "1")))
            if version is None:  # nothing after it can be told
                return self.result
        values["fsdp_version"] = version
        self.version = version
        if version not in (1, 2):
            self.result.odd_version = True
        self._sharding()
        self._offload()
        self._backward_prefetch()
        self._state_dict()
        self._wrap_policy()
        self._fsdp1_flags()
        self._checkpointing()
        self._loading()
        self._mixed_precision()
        return self.result

    # -- the statements of __post_init__, in order --------------------------------------

    def _sharding(self) -> None:
        values, version = self.result.values, self.version
        strategy = self.get("sharding_strategy")
        if strategy is not None and version == 2:  # warned in every version, but only FSDP2 never reads it
            self.drop("sharding_strategy", "sharding_strategy is deprecated in favor of "
                                        "reshard_after_forward. This will be removed in a future version of "
                                        "Accelerate.")
        if version == 1:
            if strategy is None:
                strategy = self.getenv("FSDP_SHARDING_STRATEGY", "FULL_SHARD")
            if isinstance(strategy, str):  # anything else is passed on to torch as given
                strategy = self.step(FSDP_CHOICE, "sharding_strategy",
                                     lambda: _to_enum(strategy, ShardingStrategy, SHARDING_STRATEGY_NAMES),
                                     ShardingStrategy.FULL_SHARD)
        values["sharding_strategy"] = strategy
        reshard = self.get("reshard_after_forward")
        if reshard is None and strategy is None:
            reshard = self.getenv("FSDP_RESHARD_AFTER_FORWARD", "true" if version == 2 else "FULL_SHARD")
            if version == 2:
                reshard = self.step(FSDP_FLAG, "reshard_after_forward",
                                    lambda: str_to_bool(reshard.lower(), to_bool=True), True)
        if isinstance(reshard, str):
            if version == 2:
                reshard = self.step(FSDP_FLAG, "reshard_after_forward",
                                    lambda: str_to_bool(reshard.lower(), to_bool=True), True)
            else:
                reshard = self.step(FSDP_CHOICE, "reshard_after_forward",
                                    lambda: _to_enum(reshard, ShardingStrategy, SHARDING_STRATEGY_NAMES),
                                    ShardingStrategy.FULL_SHARD)
        if version == 2 and not isinstance(reshard, bool):
            self.fail("reshard_after_forward", FSDP_FLAG, f"ValueError: reshard_after_forward set to "
                                       f"{_py(reshard)}. This is not supported with FSDP2, please set to a `bool`")
            reshard = True
        if version == 1 and isinstance(reshard, bool):
            self.fail("reshard_after_forward", FSDP_CHOICE, f"ValueError: reshard_after_forward set "
                                       f"to {reshard}. This is not supported with FSDP1, please set to a `str` or an "
                                       "instance of `torch.distributed.fsdp.fully_sharded_data_parallel."
                                       "ShardingStrategy`")
            reshard = None
        values["reshard_after_forward"] = reshard

    def _offload(self) -> None:
        offload = self.get("cpu_offload")
        if offload is None:
            offload = self.step(FSDP_FLAG, "cpu_offload",
                                lambda: str_to_bool(self.getenv("FSDP_OFFLOAD_PARAMS", "False")) == 1, False)
        if isinstance(offload, bool):
            offload = _Offload(self.version, offload)
        if not isinstance(offload, _Offload) or offload.version != self.version:
            if self.version == 2:
                text = (f"ValueError: `cpu_offload` must be an instance of `torch.distributed.fsdp.OffloadPolicy` in "
                        f"FSDP2, got {_py(offload)}")
                self.fail("cpu_offload", FSDP_FLAG, text)
            elif self.version == 1:
                text = (f"ValueError: `cpu_offload` must be an instance of `torch.distributed.fsdp.CPUOffload` in "
                        f"FSDP1, got {_py(offload)}")
                self.fail("cpu_offload", FSDP_FLAG, text)
            offload = _Offload(self.version, False)
        self.result.values["cpu_offload"] = offload.on

    def _backward_prefetch(self) -> None:
        prefetch = self.get("backward_prefetch")
        if prefetch is None:
            prefetch = self.getenv("FSDP_BACKWARD_PREFETCH", None)
        if isinstance(prefetch, str) and prefetch.upper() == "NO_PREFETCH":
            prefetch = None
        if prefetch is not None and not isinstance(prefetch, BackwardPrefetch):
            prefetch = self.step(FSDP_CHOICE, "backward_prefetch",
                                 lambda: _to_enum(prefetch, BackwardPrefetch, BACKWARD_PREFETCH_NAMES))
        if self.version == 2 and prefetch is not None:
            self.drop("backward_prefetch", "backward_prefetch is not supported in FSDP2. Setting "
                                                             "backward prefetch to None.")
            prefetch = None
        self.result.values["backward_prefetch"] = prefetch

    def _state_dict(self) -> None:
        """set_state_dict_type()."""
        kind = self.get("state_dict_type")
        if kind is None:
            kind = self.getenv("FSDP_STATE_DICT_TYPE", "FULL_STATE_DICT" if self.version == 1 else
                               "SHARDED_STATE_DICT")
        if isinstance(kind, str):
            def member():
                return StateDictType(int(kind)) if kind.isdigit() else StateDictType[kind.upper()]
            kind = self.step(FSDP_CHOICE, "state_dict_type", member)
        if self.version == 2 and kind == StateDictType.LOCAL_STATE_DICT:
            self.fail("state_dict_type", FSDP2_LOCAL_STATE_DICT, "ValueError: FSDP2 does not support "
                                       "LOCAL_STATE_DICT. Please set `fsdp_state_dict_type` to `SHARDED_STATE_DICT` "
                                       "or `FULL_STATE_DICT`.")
        self.result.values["state_dict_type"] = kind.name if isinstance(kind, StateDictType) else None

    def _wrap_policy(self) -> None:
        values = self.result.values
        policy = self.get("auto_wrap_policy")
        if policy is None:
            policy = self.getenv("FSDP_AUTO_WRAP_POLICY", "NO_WRAP")
        names, min_params = self.get("transformer_cls_names_to_wrap"), self.get("min_num_params")
        if isinstance(policy, str):
            if policy.upper() not in AUTO_WRAP_POLICIES:
                self.fail("auto_wrap_policy", FSDP_CHOICE, f"ValueError: Invalid auto wrap policy: "
                                           f"{policy}. Must be one of {AUTO_WRAP_POLICIES}"
                                           + _did_you_mean(policy, AUTO_WRAP_POLICIES))
                policy = None
            else:
                policy = policy.upper()
            if policy == "TRANSFORMER_BASED_WRAP":
                if names is None:
                    names = self.getenv("FSDP_TRANSFORMER_CLS_TO_WRAP", None)
                if isinstance(names, str):
                    names = names.split(",")
                self._layer_names(names)
            elif policy == "SIZE_BASED_WRAP":
                if min_params is None:
                    min_params = self.step(FSDP_MIN_NUM_PARAMS, "min_num_params",
                                           lambda: int(self.getenv("FSDP_MIN_NUM_PARAMS", 0)))
                elif not isinstance(min_params, int):
                    self.fail("min_num_params", FSDP_MIN_NUM_PARAMS, f"ValueError: `min_num_params` must be "
                                               f"an integer. Got {_py(min_params)} of type {type(min_params)}")
                    min_params = None
            elif policy == "NO_WRAP":
                policy = None
        values.update(auto_wrap_policy=policy, transformer_cls_names_to_wrap=names, min_num_params=min_params)

    def _layer_names(self, names) -> None:
        """set_auto_wrap_policy (in prepare()): each name must be a class of the model; it stops at the first."""
        if names is None:
            return  # the model's _no_split_modules are wrapped
        bad = [name for name in names if not isinstance(name, str) or not name.isidentifier()]
        if bad:
            more = f" ({len(bad) - 1} more names are not class names either)" if len(bad) > 1 else ""
            self.fail("transformer_cls_names_to_wrap", FSDP_LAYER_CLASS_FORMAT,
                      f"prepare() fails in every process with \"ValueError: Could not find the transformer layer "
                      f"class {_py(bad[0])} in the model.\": {_why_not_a_class(bad[0])}{more}")

    def _fsdp1_flags(self) -> None:
        """use_orig_params, sync_module_states, forward_prefetch: read for FSDP1, dropped or refused in FSDP2."""
        values, version = self.result.values, self.version
        for name, variable in (("use_orig_params", "FSDP_USE_ORIG_PARAMS"),
                               ("sync_module_states", "FSDP_SYNC_MODULE_STATES")):
            value = self.get(name)
            if value is None and version == 1:
                value = self.step(FSDP_FLAG, name, lambda v=variable: str_to_bool(self.getenv(v, "False")) == 1, False)
            if version == 2 and value is not None:
                self.drop(name, {
                    "use_orig_params": "use_orig_params is obsolete in FSDP2, as FSDP2 always uses the original "
                                       "parameters.",
                    "sync_module_states": "sync_module_states is obsolete in FSDP2, as it is not needed anymore.Setting "
                                          "sync_module_states to None."}[name])
                value = None
            values[name] = value
        prefetch = self.get("forward_prefetch")
        if prefetch is None and version == 1:
            prefetch = self.step(FSDP_FLAG, "forward_prefetch",
                                 lambda: str_to_bool(self.getenv("FSDP_FORWARD_PREFETCH", "False")) == 1, False)
        if version == 2 and prefetch is not None:
            self.fail("forward_prefetch", FSDP1_KEY_UNDER_FSDP2, "ValueError: forward_prefetch is not "
                                       "yet implemented in FSDP2, set to None or use `fsdp_version=1`")
            prefetch = None
        values["forward_prefetch"] = prefetch

    def _checkpointing(self) -> None:
        values = self.result.values
        for name, variable in (("activation_checkpointing", "FSDP_ACTIVATION_CHECKPOINTING"),
                               ("activation_checkpointing_offload", "FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD")):
            value = self.get(name)
            if value is None:
                value = self.step(FSDP_FLAG, name, lambda v=variable: str_to_bool(self.getenv(v, "False")) == 1, False)
            values[name] = value
        if values["activation_checkpointing_offload"] and not values["activation_checkpointing"]:
            self.fail("activation_checkpointing_offload", FSDP_CHECKPOINTING_OFFLOAD, "ValueError: "
                                       "`activation_checkpointing_offload=True` requires "
                                       "`activation_checkpointing=True`.")
        elif values["activation_checkpointing_offload"] and self.version != 2:
            self.fail("activation_checkpointing_offload", FSDP_CHECKPOINTING_OFFLOAD, "ValueError: "
                                       "`activation_checkpointing_offload=True` requires `fsdp_version=2`.")

    def _loading(self) -> None:
        values = self.result.values
        if self.get("ignored_modules") is None:
            values["ignored_modules"] = self.getenv("FSDP_IGNORED_MODULES", None)
        loading = self.get("cpu_ram_efficient_loading")
        if loading is None:
            loading = self.step(FSDP_FLAG, "cpu_ram_efficient_loading",
                                lambda: str_to_bool(self.getenv("FSDP_CPU_RAM_EFFICIENT_LOADING", "False")) == 1,
                                False)
        values["cpu_ram_efficient_loading"] = loading
        if self.version == 1 and loading and not values.get("sync_module_states"):
            values["sync_module_states"] = True  # "sync_module_states cannot be False since efficient cpu ram ..."

    def _mixed_precision(self) -> None:
        """set_mixed_precision(policy, override=True) for a string, the key and dtype check for a dict."""
        policy = self.get("mixed_precision_policy")
        if isinstance(policy, str) and policy not in PRECISIONS:
            self.fail("mixed_precision_policy", FSDP_CHOICE, f"ValueError: Invalid mixed precision: "
                                       f"{policy}. Must be one of {PRECISIONS}"
                                       + _did_you_mean(policy.lower(), PRECISIONS))
        elif isinstance(policy, dict):
            # A dict from JSON holds text, never torch dtypes: set_mixed_precision refuses it.
            valid = ["param_dtype", "reduce_dtype"] + (["buffer_dtype"] if self.version == 1 else ["output_dtype"])
            self.fail("mixed_precision_policy", FSDP_CHOICE, f"ValueError: Invalid mixed precision "
                                       f"policy: {_py(policy)}. Must be a `dict` with keys {valid}.Values must be one "
                                       "of [torch.bfloat16, torch.float16, torch.bfloat16, torch.float32]")
        self.result.values["mixed_precision_policy"] = policy


def _to_enum(value, members: type[enum.Enum], names: list[str]):
    """The plugin's name-or-number mapping (sharding strategy, backward prefetch)."""
    if isinstance(value, str) and value.upper() in names:
        value = names.index(value.upper()) + 1
    if isinstance(value, int) or value.isdigit():
        return members(int(value))
    return members[value.upper()]


_NAMES = {"sharding_strategy": SHARDING_STRATEGY_NAMES, "reshard_after_forward": SHARDING_STRATEGY_NAMES,
          "backward_prefetch": BACKWARD_PREFETCH_NAMES, "state_dict_type": STATE_DICT_TYPES}


def _did_you_mean(word: str, choices: list[str]) -> str:
    guess = closest(word, choices)
    return f"; did you mean {guess}?" if guess else ""


def _why_not_a_class(name) -> str:
    if not isinstance(name, str):
        return "the names must be text"
    if name.startswith("[") or name.endswith("]") or "'" in name:
        return ("the launcher exported str() of a YAML list; write the names as one text separated by commas, "
                "e.g. LlamaDecoderLayer,LlamaMLP")
    if name.strip() != name:
        return "the plugin splits on ',' without stripping spaces; write the names separated by commas only"
    if not name:
        return "an empty name (a trailing or doubled comma)"
    return "not a Python class name"


def _py(value) -> str:
    """str(value) as an f-string writes it, cut for a message."""
    text = py_str(value, 200)
    return text if len(text) <= 200 else text[:200] + "..."


def _text(error: BaseException) -> str:
    if isinstance(error, KeyError):
        return f"KeyError: {error.args[0]!r}" if error.args else "KeyError"
    return f"{type(error).__name__}: {error}"
