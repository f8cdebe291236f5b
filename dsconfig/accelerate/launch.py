"""Replay `accelerate launch --config_file F script.py` on a loaded config, without Accelerate.

`accelerate launch` never validates the config as a whole: it copies the values onto its
argparse namespace (`_validate_launch_command`) and then uses them in Python expressions
(`num_processes // num_machines`, `mixed_precision.lower()`, ...) while it builds the
environment for the chosen launcher (`prepare_deepspeed_cmd_env`, `prepare_multi_gpu_env`,
`prepare_simple_launcher_cmd_env`, then torchrun's `config_from_args`). This module evaluates
the same expressions on the same values, in the same order, so a value that raises there
raises here, with the same exception text. Each failure becomes a Finding (fails_in
"launch") at the key whose value caused it; the replay carries on past a failure where it
can, so one run reports every key that stops the launch.

Out of scope, because they depend on the machine rather than the file: whether mpirun, an FP8
backend or a GPU is installed, and whether the port is already in use.
"""

from __future__ import annotations

import copy
import json

from ..findings import Finding
from ..phases import LAUNCH
from ..pointers import pointer_join
from ..rules.accelerate_keys import INVALID_SETTING, MIXED_PRECISION, YAML_BOOLEAN
from ..rules.accelerate_launch import GPU_IDS, MAIN_PROCESS_IP, NUM_PROCESSES_MISSING
from ..values import key_token, py_str
from . import schema

MULTI_DEVICE = ("MULTI_GPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA", "MULTI_XPU", "MULTI_HPU",
                "MULTI_NEURON")
_PREFIXED = ("fsdp_config", "fp8_config", "dynamo_config")
_TORCHRUN_SPECIAL = ("cpu", "gpu", "xpu", "auto")  # nproc_per_node words torchrun resolves on the machine
# accelerate.utils.str_to_bool, which reads the boolean environment variables the launcher writes.
TRUE_WORDS = ("y", "yes", "t", "true", "on", "1")
FALSE_WORDS = ("n", "no", "f", "false", "off", "0")


def launcher_of(distributed_type) -> str:
    """Which launcher `launch_command` picks: deepspeed, torchrun, tpu or simple (one process, or mpirun)."""
    if distributed_type == "DEEPSPEED":
        return "deepspeed"
    if distributed_type in MULTI_DEVICE or distributed_type in ("FSDP", "MEGATRON_LM"):
        return "torchrun"
    if distributed_type == "XLA":
        return "tpu"
    return "simple"


def processed(config: dict) -> tuple[dict, dict]:
    """`BaseConfig.process_config` + the dataclass defaults: the fields `accelerate launch` sees.

    Returns (fields, sources): sources maps a field to the pointer it came from, where that
    is not its own key (the legacy `fp16` and `dynamo_backend` keys).
    """
    fields = copy.copy(config)
    sources: dict[str, str] = {}
    fields.setdefault("compute_environment", "LOCAL_MACHINE")
    for flag in ("use_cpu", "debug", "enable_cpu_affinity"):
        fields.setdefault(flag, False)
    if "num_processes" not in fields and fields.get("distributed_type") == "NO":
        fields["num_processes"] = 1
    if "mixed_precision" not in fields:
        fields["mixed_precision"] = "fp16" if fields.get("fp16") else None
        if fields.get("fp16"):
            sources["mixed_precision"] = "/fp16"
    fields.pop("fp16", None)
    if "dynamo_backend" in fields:
        backend = fields.pop("dynamo_backend")
        fields["dynamo_config"] = {} if backend == "NO" else {"dynamo_backend": backend}
        sources["dynamo_config"] = "/dynamo_backend"
    for name, prop in schema.fields(schema.CLUSTER).items():
        if name not in fields and "x-accelerate-legacy" not in prop:
            fields[name] = copy.copy(prop.get("default"))
    for name in schema.SECTIONS:  # ClusterConfig.__post_init__
        if fields.get(name) is None:
            fields[name] = {}
    return fields, sources


class Replay:
    """The namespace `accelerate launch` builds from the config, and every launch failure on the way.

    `args` holds the launch options after the config was applied; `source[option]` the JSON
    pointer of the YAML key that set it.
    """

    def __init__(self, config: dict, booleans: dict[str, str] | None = None):
        self.booleans = booleans or {}
        self.findings: list[Finding] = []
        self.fields, self.source = processed(config)
        self.args = dict(schema.launch_defaults())
        self.launcher = launcher_of(self.fields.get("distributed_type"))
        self._run()

    # -- helpers -------------------------------------------------------------------------

    def where(self, option: str) -> str:
        return self.source.get(option, pointer_join("", option))

    def fail(self, rule, pointer: str, error: BaseException | str, hint: str = "", on_key: bool = False,
             fix: str | None = None, launch: str = "`accelerate launch`"):
        """`launch`: the launch that fails, when not every one does (`accelerate launch` without a flag)."""
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        if rule is INVALID_SETTING and pointer in self.booleans:
            rule = YAML_BOOLEAN
            hint = f"YAML 1.1 reads the unquoted `{self.booleans[pointer]}` as a boolean; quote it"
        message = f"{launch} fails: {text}" + (f"; {hint}" if hint else "")
        self.findings.append(Finding(rule, message, pointer, fails_in=LAUNCH, on_key=on_key, fix=fix))

    def attempt(self, rule, pointer: str, compute, hint: str = ""):
        """(ok, value) of compute(); a failure is recorded at `pointer`."""
        try:
            return True, compute()
        except Exception as error:  # the same expression raised in accelerate launch
            self.fail(rule, pointer, error, hint)
            return False, None

    # -- the replay ----------------------------------------------------------------------

    def _run(self) -> None:
        fields, args = self.fields, self.args
        self._choose_paradigm()
        self._gpu_ids()
        self._copy_fields()
        if not args["debug"]:
            args["debug"] = fields.get("debug")
        if not args["mixed_precision"]:
            args["mixed_precision"] = "no" if fields.get("mixed_precision") is None else fields["mixed_precision"]
            self.source.setdefault("mixed_precision", "/mixed_precision")
        if args["dynamo_backend"] is None:
            args["dynamo_backend"] = "no"
        if args["num_processes"] == -1:
            self.fail(NUM_PROCESSES_MISSING, self.where("num_processes"),
                      "ValueError: You need to manually pass in `--num_processes` using this config yaml.",
                      "set num_processes: the total number of processes over all machines",
                      launch="`accelerate launch` without --num_processes")
        self._cpu_threads()
        if self.launcher == "deepspeed":
            self._deepspeed()
        elif self.launcher == "torchrun":
            self._torchrun()
        elif self.launcher == "simple":
            self._simple()
        # tpu: the TPU launchers need torch_xla; nothing more to replay on a config value.

    def _choose_paradigm(self) -> None:
        fields, args = self.fields, self.args
        kind = fields.get("distributed_type")
        args["use_deepspeed"] = kind == "DEEPSPEED"
        args["multi_gpu"] = kind in MULTI_DEVICE
        args["tpu"] = kind == "XLA"
        args["use_fsdp"] = kind == "FSDP"
        args["use_megatron_lm"] = kind == "MEGATRON_LM"
        args["tpu_use_cluster"] = fields.get("tpu_use_cluster") if args["tpu"] else False
        args["use_parallelism_config"] = fields.get("parallelism_config") != {}

    def _gpu_ids(self) -> None:
        fields, args = self.fields, self.args
        args["gpu_ids"] = fields["gpu_ids"] if fields.get("gpu_ids") is not None else "all"
        if args["multi_gpu"] and args["num_machines"] is None:
            args["num_machines"] = fields.get("num_machines")
        ok, ids = self.attempt(INVALID_SETTING, "/gpu_ids", lambda: args["gpu_ids"].split(","),
                               'write the GPU ids as text, e.g. "0,1", or "all"')
        if not ok or not (len(ids) < 2 and args["gpu_ids"] != "all" and args["multi_gpu"]):
            return
        ok, single_machine = self.attempt(INVALID_SETTING, "/num_machines", lambda: args["num_machines"] <= 1)
        if ok and single_machine:
            self.fail(GPU_IDS, "/gpu_ids",
                      "ValueError: Less than two GPU ids were configured and tried to run on multiple GPUs. Please "
                      "ensure at least two are specified for `--gpu_ids`, or use `--gpu_ids='all'`.")

    def _copy_fields(self) -> None:
        """Sub-dict keys onto the namespace (prefixed), then scalars the namespace has as None."""
        fields, args = self.fields, self.args
        for name in schema.field_order(schema.CLUSTER):
            value = fields.get(name)
            if isinstance(value, dict):
                legacy = self.source.get(name)  # dynamo_config made from the legacy top-level dynamo_backend
                for key, item in value.items():
                    pointer = legacy or pointer_join(pointer_join("", name), key_token(key))
                    if not isinstance(key, str):
                        error = ("AttributeError: '{}' object has no attribute 'startswith'" if name in _PREFIXED
                                 else "TypeError: attribute name must be string, not '{}'")
                        self.fail(INVALID_SETTING, pointer, error.format(type(key).__name__), "write the key as text",
                                  on_key=True)
                        continue
                    option = schema.launch_name(name, key)
                    args[option] = item
                    self.source[option] = pointer
            elif name not in ("compute_environment", "mixed_precision", "distributed_type") \
                    and args.get(name) is None:
                args[name] = value
                self.source.setdefault(name, pointer_join("", name))

    def _cpu_threads(self) -> None:
        """`--num_cpu_threads_per_process` is derived for CPU runs (OMP_NUM_THREADS unset)."""
        args = self.args
        if not args.get("use_cpu"):
            return
        ok, positive = self.attempt(INVALID_SETTING, self.where("num_processes"), lambda: args["num_processes"] >= 1)
        if ok and positive:
            self.attempt(INVALID_SETTING, self.where("num_machines"),
                         lambda: max(int(args["num_processes"] / args["num_machines"]), 1))

    # -- launchers -----------------------------------------------------------------------

    def _multi_machine(self) -> bool | None:
        ok, multi = self.attempt(INVALID_SETTING, self.where("num_machines"), lambda: self.args["num_machines"] > 1,
                                 "num_machines must be a number")
        return bool(multi) if ok else None

    def _per_machine(self) -> None:
        args = self.args
        pointer = self.where("num_processes") if not isinstance(args["num_processes"], int) \
            else self.where("num_machines")
        # one expression in accelerate: str() of a 0x... integer past Python's digit limit raises there too
        ok, per_machine = self.attempt(INVALID_SETTING, pointer,
                                       lambda: str(args["num_processes"] // args["num_machines"]))
        if ok:
            args["nproc_per_node"] = per_machine

    def _single_machine(self) -> None:
        """`args.nproc_per_node = str(args.num_processes)`: str() raises on an integer past Python's digit
        limit (YAML reads `0x` and 5,000 hex digits as one), and the launch stops there."""
        args = self.args
        ok, text = self.attempt(INVALID_SETTING, self.where("num_processes"), lambda: str(args["num_processes"]),
                                "num_processes is the number of processes to start")
        if ok:
            args["nproc_per_node"] = text

    def _machine_rank(self) -> None:
        self.attempt(INVALID_SETTING, self.where("machine_rank"), lambda: int(self.args["machine_rank"]),
                     "machine_rank must be a whole number")

    def _port(self) -> None:
        """`is_port_in_use(port)` opens a socket: the port must be an int in 0-65535."""
        port = self.args["main_process_port"]
        if port is None:
            return
        pointer = self.where("main_process_port")
        if isinstance(port, float) or not isinstance(port, int):
            self.fail(INVALID_SETTING, pointer,
                      f"TypeError: '{type(port).__name__}' object cannot be interpreted as an integer",
                      "main_process_port must be a whole number")
        elif not 0 <= port <= 65535:
            self.fail(INVALID_SETTING, pointer, "OverflowError: connect_ex(): port must be 0-65535.")

    def _mixed_precision(self) -> None:
        value = self.args["mixed_precision"]
        pointer = self.where("mixed_precision")
        choices = schema.enum(schema.CLUSTER, "mixed_precision")
        if not isinstance(value, str):
            if pointer in self.booleans:
                word = self.booleans[pointer]
                fix = "'no' (quoted)" if value is False else "one of 'fp16', 'bf16', 'fp8' or 'no', quoted"
                self.fail(YAML_BOOLEAN, pointer, f"AttributeError: '{type(value).__name__}' object has no attribute "
                                                 "'lower'",
                          f"YAML 1.1 reads the unquoted `{word}` as {value}; write {fix}",
                          fix=json.dumps(word) if word.lower() == "no" else None)  # the word, quoted: a choice
            else:
                self.fail(MIXED_PRECISION, pointer, f"AttributeError: '{type(value).__name__}' object has no attribute "
                                                    "'lower'", f"use one of {', '.join(choices)} (as text)")
        elif value.lower() not in choices:
            self.fail(MIXED_PRECISION, pointer, f"ValueError: Unknown mixed_precision mode: {value.lower()}. Choose "
                                                f"between {choices}.")

    def _dynamo(self) -> None:
        value = self.args["dynamo_backend"]
        pointer = self.where("dynamo_backend")
        choices = schema.section("dynamo_config")["properties"]["dynamo_backend"]["x-accelerate-choices"]
        if not isinstance(value, str):
            self.fail(INVALID_SETTING, pointer, f"AttributeError: '{type(value).__name__}' object has no attribute "
                                                "'upper'", "write the backend as text, e.g. 'no' or 'inductor'")
        elif value.upper() not in choices:
            self.fail(INVALID_SETTING, pointer, f"ValueError: Unknown dynamo backend: {value.upper()}. Choose between "
                                                f"{choices}.")

    def _parallelism(self) -> None:
        if not self.args["use_parallelism_config"]:
            return
        for option in ("parallelism_config_cp_size", "parallelism_config_sp_size"):
            self.attempt(INVALID_SETTING, self.where(option), lambda: self.args[option] > 1,
                         f"{option.removeprefix('parallelism_config_')} must be a number")

    def _deepspeed(self) -> None:
        args = self.args
        section = self.fields.get("deepspeed_config")
        if not isinstance(section, dict):
            self.fail(INVALID_SETTING, "/deepspeed_config", f"AttributeError: '{type(section).__name__}' object has no "
                                                            "attribute 'keys'", "deepspeed_config must be a mapping")
        if args["deepspeed_multinode_launcher"] is None:
            args["deepspeed_multinode_launcher"] = "pdsh"
        multi = self._multi_machine()
        if multi and args["deepspeed_multinode_launcher"] != "standard":
            if args["deepspeed_exclusion_filter"] is None and args["deepspeed_inclusion_filter"] is None:
                self._per_machine()
        elif multi:
            self._per_machine()
        elif multi is False:
            self._single_machine()
        if multi:
            self._machine_rank()  # node_rank and the port check: int(args.machine_rank)
        self._port()
        self._mixed_precision()
        self._parallelism()
        if multi is False or (multi and args["deepspeed_multinode_launcher"] == "standard"):
            self._torchrun_config()

    def _torchrun(self) -> None:
        args = self.args
        multi = self._multi_machine()
        if multi:
            self._per_machine()
            self._machine_rank()  # node_rank and the port check: int(args.machine_rank)
        elif multi is False:
            self._single_machine()
        self._port()
        self._mixed_precision()
        self._dynamo()
        if args["use_fsdp"] and args["fsdp_cpu_ram_efficient_loading"] and not args["fsdp_sync_module_states"]:
            pointer = self.source.get("fsdp_sync_module_states") or self.where("fsdp_cpu_ram_efficient_loading")
            self.fail(INVALID_SETTING, pointer, "ValueError: When using `--fsdp_cpu_ram_efficient_loading` set "
                                                "`--fsdp_sync_module_states` to `True`",
                      "the launcher tests truthiness: only false, 0, empty or null turn sync_module_states off")
        self._parallelism()
        if multi is not None:
            self._torchrun_config()

    def _torchrun_config(self) -> None:
        """torch.distributed.run.config_from_args: nproc_per_node must be an integer (or a device word)."""
        nproc = self.args.get("nproc_per_node")
        if nproc is None or nproc in _TORCHRUN_SPECIAL:
            return
        try:
            int(nproc)
        except ValueError:
            rule = NUM_PROCESSES_MISSING if self.args["num_processes"] is None else INVALID_SETTING
            self.fail(rule, self.where("num_processes"), f"ValueError: Unsupported nproc_per_node value: {nproc}",
                      "torchrun needs a whole number of processes per machine")

    def _simple(self) -> None:
        args = self.args
        num_processes, num_machines = args["num_processes"], args["num_machines"]
        if args["mpirun_hostfile"] is not None:
            self.attempt(INVALID_SETTING, self.where("num_processes"),
                         lambda: str(num_processes // num_machines) if num_processes and num_machines else "1")
            if not isinstance(args["mpirun_hostfile"], str):
                self.fail(INVALID_SETTING, self.where("mpirun_hostfile"),
                          f"TypeError: expected str, bytes or os.PathLike object, not "
                          f"{type(args['mpirun_hostfile']).__name__}")
        ok, multi = self.attempt(INVALID_SETTING, self.where("num_machines"), lambda: num_machines > 1,
                                 "num_machines must be a number")
        if ok and multi:
            if args["main_process_ip"] is None:
                self.fail(MAIN_PROCESS_IP, self.where("main_process_ip"),
                          "AssertionError: When using multiple machines, you need to specify the main process IP.")
            if args["main_process_port"] is None:
                self.fail(MAIN_PROCESS_IP, self.where("main_process_port"), "AssertionError: When using multiple "
                                                                            "machines, you need to specify the main "
                                                                            "process port.")
        ok_np, many = self.attempt(INVALID_SETTING, self.where("num_processes"),
                                   lambda: num_processes is not None and num_processes > 1)
        master = (ok_np and many) or (ok and multi)
        use_cpu = py_str(args["cpu"] or args.get("use_cpu"))
        if use_cpu.lower() not in TRUE_WORDS + FALSE_WORDS:
            self.fail(INVALID_SETTING, self.where("use_cpu"), f"ValueError: invalid truth value {use_cpu.lower()}",
                      "use_cpu must be true or false")
        self._mixed_precision()
        self._dynamo()
        # subprocess.Popen(cmd, env=...) needs text in every environment value it gets.
        raw_env = {"dynamo_mode": args["dynamo_mode"]}
        if master:
            raw_env["main_process_ip"] = args["main_process_ip"] if args["main_process_ip"] is not None else ""
        for option, value in raw_env.items():
            if not isinstance(value, str):
                self.fail(INVALID_SETTING, self.where(option),
                          f"TypeError: expected str, bytes or os.PathLike object, not {type(value).__name__}",
                          f"write {option} as text")
