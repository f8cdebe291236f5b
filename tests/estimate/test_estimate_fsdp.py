"""`estimate --backend fsdp`: the FSDP memory model against real FSDP on CPU, its arithmetic, and the
command (options, an Accelerate YAML as input, one-line errors)."""

from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner

from dsconfig.estimate import (
    Hardware,
    TrainingSetup,
    catalog,
    estimate,
    fsdp_memory,
    shapes,
)
from dsconfig.estimate.command import estimate as estimate_command
from dsconfig.fsdp.settings import FsdpSettings, accelerate_yaml


def llama(name: str = "llama-3-8b") -> shapes.ModelShape:
    return shapes.from_hf_config(catalog.CATALOG[name].config, name)


def run(*args):
    return CliRunner().invoke(estimate_command, [str(a) for a in args], prog_name="dsconfig estimate")


def one_line_error(result, *fragments):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("dsconfig estimate: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# -- calibrated: real FSDP1 and FSDP2 on a gloo group of two CPU processes ----------------------------

@pytest.fixture(scope="module")
def measured():
    pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    from tests.estimate_harness import fsdp_ranks
    with socket.socket() as probe:  # a free port for the rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return fsdp_ranks.measure(port)


@pytest.mark.parametrize("version, strategy", [(2, "FULL_SHARD"), (2, "SHARD_GRAD_OP"), (1, "FULL_SHARD"),
                                               (1, "SHARD_GRAD_OP"), (1, "NO_SHARD")])
def test_states_and_gathered_parameters_equal_real_fsdp(measured, version, strategy):
    from tests.estimate_harness import fsdp_ranks
    shape = shapes.from_hf_config(fsdp_ranks.CONFIG, "tiny-llama")
    fsdp = fsdp_memory.Fsdp(strategy, version)
    states = fsdp_memory.model_states(shape, precision="bf16", optimizer="adamw", fsdp=fsdp,
                                      gpus=fsdp_ranks.WORLD, nodes=1)
    real = measured[(version, strategy)]
    assert (real["parameters"], real["gradients"], real["optimizer_states"]) == \
        (states.parameters, states.gradients, states.optimizer_states)
    gathered = {k: v for k, v in fsdp_memory.buffers(shape, precision="bf16", fsdp=fsdp).items()
                if k.startswith("gathered")}
    assert real["gathered_in_backward"] == sum(gathered.values()), gathered
    units = fsdp_memory.units(shape, True)
    if strategy == "FULL_SHARD":
        # FSDP1 keeps the root gathered from forward to backward; Accelerate gives FSDP2's root
        # reshard_after_forward=True too, so it is gathered again for backward
        assert real["gathered_after_forward"] == (2 * units.root if version == 1 else 0)
        assert real["gathered_in_backward"] == 2 * (units.root + 2 * units.layer)


# -- the arithmetic ----------------------------------------------------------------------------------

def test_units_of_llama_3_8b():
    units = fsdp_memory.units(llama(), True)
    assert units.layer == 218_112_000  # q, k, v, o, gate, up, down and two RMSNorms
    assert units.root == 8_030_261_248 - 32 * 218_112_000  # embeddings, LM head (untied), final norm
    assert fsdp_memory.units(llama(), False) == fsdp_memory.Units(0, 8_030_261_248)


@pytest.mark.parametrize("strategy, gpus, nodes, degree", [("FULL_SHARD", 8, 2, 16), ("SHARD_GRAD_OP", 8, 2, 16),
                                                           ("HYBRID_SHARD", 8, 2, 8), ("HYBRID_SHARD_ZERO2", 4, 3, 4),
                                                           ("NO_SHARD", 8, 2, 1)])
def test_sixteen_bytes_per_parameter_over_the_shard_degree(strategy, gpus, nodes, degree):
    P = 8_030_261_248
    states = fsdp_memory.model_states(llama(), precision="bf16", optimizer="adamw",
                                      fsdp=fsdp_memory.Fsdp(strategy, 1), gpus=gpus, nodes=nodes)
    assert fsdp_memory.shard_degree(fsdp_memory.Fsdp(strategy, 1), gpus, nodes) == degree
    assert states.parameters == states.gradients == -(-4 * P // degree)  # fp32, upcast by Accelerate
    assert states.optimizer_states == -(-8 * P // degree)


def test_reshard_after_forward_or_not():
    shape = llama()
    full = fsdp_memory.buffers(shape, precision="bf16", fsdp=fsdp_memory.Fsdp("FULL_SHARD", 2))
    kept = fsdp_memory.buffers(shape, precision="bf16", fsdp=fsdp_memory.Fsdp("SHARD_GRAD_OP", 2))
    units = fsdp_memory.units(shape, True)
    assert full["gathered root unit (embeddings, head)"] == 2 * units.root
    assert full["gathered layers (computed + prefetched)"] == 4 * units.layer
    assert kept["gathered parameters (kept from forward to backward)"] == 2 * shape.parameters
    # FSDP2 copies the unit's gradients into a reduce-scatter input; FSDP1's flat gradient is that input
    fsdp1 = fsdp_memory.buffers(shape, precision="bf16", fsdp=fsdp_memory.Fsdp("FULL_SHARD", 1))
    assert full["unit gradient before reduce-scatter"] == 2 * fsdp1["unit gradient before reduce-scatter"]
    # fp32 NO_SHARD computes on the parameters themselves: nothing gathered
    assert list(fsdp_memory.buffers(shape, precision="fp32", fsdp=fsdp_memory.Fsdp("NO_SHARD", 1))) == \
        ["unit gradient before reduce-scatter"]


def test_offload_moves_the_states_to_the_cpu():
    P, gpus = 8_030_261_248, 8
    on_gpu = fsdp_memory.model_states(llama(), precision="bf16", optimizer="adamw", fsdp=fsdp_memory.Fsdp(),
                                      gpus=gpus, nodes=1)
    off = fsdp_memory.model_states(llama(), precision="bf16", optimizer="adamw",
                                   fsdp=fsdp_memory.Fsdp(offload_params=True), gpus=gpus, nodes=1)
    assert (off.parameters, off.gradients, off.optimizer_states) == (0, 0, 0)
    assert off.cpu_per_node == on_gpu.gpu_total * gpus + 4 * P  # every rank's shards, and rank 0 loading
    assert on_gpu.cpu_per_node == 4 * P  # cpu_ram_efficient_loading: rank 0 alone holds the fp32 model


def test_full_state_dict_gathers_model_and_optimizer_on_rank_0():
    P = 8_030_261_248
    saved = fsdp_memory.model_states(llama(), precision="bf16", optimizer="adamw",
                                     fsdp=fsdp_memory.Fsdp(full_state_dict=True), gpus=8, nodes=1)
    assert saved.cpu_per_node == 4 * P + 8 * P


def test_frozen_parameters_stay_low_precision_in_fsdp2_only():
    shape = shapes.from_hf_config(catalog.CATALOG["llama-3.2-1b"].config, "llama-3.2-1b")
    P = shape.parameters
    half = shapes.ModelShape(**{**shape.__dict__, "trainable_parameters": P // 2})
    for version, frozen_bytes in ((2, 2), (1, 4)):
        states = fsdp_memory.model_states(half, precision="bf16", optimizer="adamw",
                                          fsdp=fsdp_memory.Fsdp("FULL_SHARD", version), gpus=1, nodes=1)
        assert states.parameters == 4 * (P // 2) + frozen_bytes * (P - P // 2)
        assert states.gradients == 4 * (P // 2)


def test_impossible_setups_are_refused():
    with pytest.raises(ValueError, match="FSDP2 has no NO_SHARD"):
        TrainingSetup(fsdp=fsdp_memory.Fsdp("NO_SHARD", 2)).check()
    with pytest.raises(ValueError, match="no ZeRO stage"):
        TrainingSetup(zero_stage=3, fsdp=fsdp_memory.Fsdp()).check()


def test_the_estimate_sums_states_gathered_activations_and_overhead():
    setup = TrainingSetup(seq_len=4096, micro_batch=1, gpus=8, gradient_checkpointing=True, fsdp=fsdp_memory.Fsdp())
    result = estimate(llama(), setup, Hardware(gpu_memory=80 * 10 ** 9))
    assert result.per_gpu["total"] == sum(v for k, v in result.per_gpu.items() if k != "total")
    assert result.per_gpu["buffers"] == sum(result.buffers.values())
    assert result.fits is True and result.max_micro_batch >= 1


# -- the command -------------------------------------------------------------------------------------

def test_cli_backend_fsdp_json():
    result = run("--backend", "fsdp", "--model", "llama-3-8b", "--gpus", "8", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["setup"]["backend"] == "fsdp"
    assert data["setup"]["fsdp"] == {"version": 2, "sharding_strategy": "FULL_SHARD", "offload_params": False,
                                     "wrapped_layers": True, "full_state_dict": False,
                                     "cpu_ram_efficient_loading": True}
    assert "zero_stage" not in data["setup"]
    assert data["per_gpu_bytes"]["parameters"] == -(-4 * 8_030_261_248 // 8)


def test_cli_table_names_fsdp():
    result = run("--backend", "fsdp", "--model", "llama-3-8b", "--gpus", "8", "--fsdp-version", "1",
                 "--sharding-strategy", "SHARD_GRAD_OP", "--gpu", "H100-80GB")
    assert result.exit_code in (0, 1), result.output
    assert "FSDP1 SHARD_GRAD_OP on 1 node × 8 GPUs" in result.stdout
    assert "FSDP buffers" in result.stdout and "DeepSpeed buffers" not in result.stdout


def test_cli_reads_an_accelerate_fsdp_yaml(tmp_path):
    path = tmp_path / "accelerate_config.yaml"
    settings = FsdpSettings(version=1, sharding_strategy="HYBRID_SHARD", offload_params=True,
                            activation_checkpointing=True, transformer_layer_cls_to_wrap="LlamaDecoderLayer",
                            state_dict_type="FULL_STATE_DICT", mixed_precision="fp16")
    path.write_text(accelerate_yaml(settings, num_processes=16, num_machines=2))
    result = run(path, "--model", "llama-3-8b", "--format", "json")
    assert result.exit_code == 0, result.output
    setup = json.loads(result.stdout)["setup"]
    assert (setup["gpus"], setup["nodes"], setup["precision"], setup["gradient_checkpointing"]) == (8, 2, "fp16", True)
    assert setup["fsdp"]["version"] == 1 and setup["fsdp"]["sharding_strategy"] == "HYBRID_SHARD"
    assert setup["fsdp"]["offload_params"] is True and setup["fsdp"]["full_state_dict"] is True
    # options win over the file, the GPU count too
    result = run(path, "--model", "llama-3-8b", "--format", "json", "--no-offload-params", "--gpus", "4")
    setup = json.loads(result.stdout)["setup"]
    assert setup["fsdp"]["offload_params"] is False and setup["gpus"] == 4


def test_cli_fsdp2_yaml_reads_reshard_after_forward(tmp_path):
    path = tmp_path / "fsdp2.yaml"
    path.write_text(accelerate_yaml(FsdpSettings(sharding_strategy="SHARD_GRAD_OP"), num_processes=4))
    data = json.loads(run(path, "--model", "llama-3.2-1b", "--format", "json").stdout)
    assert data["setup"]["fsdp"]["sharding_strategy"] == "SHARD_GRAD_OP" and data["setup"]["gpus"] == 4


@pytest.mark.parametrize("text, fragments", [
    ("distributed_type: DEEPSPEED\n", ("fsdp.yaml:1:19:", "not FSDP")),
    ("distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 1\n  fsdp_sharding_strategy: HALF\n",
     ("fsdp.yaml:4:27:", "fsdp_sharding_strategy \"HALF\"")),
    ("distributed_type: FSDP\nfsdp_config:\n  fsdp_offload_params: maybe\n", ("fsdp.yaml:3:24:", "not a boolean")),
    ("distributed_type: FSDP\nnum_processes: 3\nnum_machines: 2\n", ("fsdp.yaml:2:16:", "not a multiple")),
    ("distributed_type: FSDP\nfsdp_config: [1]\n", ("fsdp.yaml:2:14:", "not a mapping")),
    ("distributed_type: FSDP\nmixed_precision: fp64\n", ("fsdp.yaml:2:18:", "mixed_precision \"fp64\"")),
    ("distributed_type: FSDP\nnum_processes: 8.0\n", ("fsdp.yaml:2:16:", "must be an integer")),
    ("distributed_type: [FSDP\n", ("fsdp.yaml:", "not YAML")),
    (("distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\n  fsdp_sharding_strategy: NO_SHARD\n"
      "  fsdp_reshard_after_forward: true\n"), ()),
])
def test_cli_bad_yaml_is_one_line(tmp_path, text, fragments):
    path = tmp_path / "fsdp.yaml"
    path.write_text(text)
    result = run(path, "--model", "gpt2")
    if not fragments:  # FSDP2 does not read fsdp_sharding_strategy: not an error, a note
        assert result.exit_code == 0, result.output
        assert "not read by FSDP2" in result.stdout
        return
    one_line_error(result, *fragments)


@pytest.mark.parametrize("args, fragment", [
    (("--backend", "fsdp", "--zero-stage", "3"), "--zero-stage is a DeepSpeed option"),
    (("--sharding-strategy", "FULL_SHARD"), "--sharding-strategy is a FSDP option"),
    (("--backend", "fsdp", "--sharding-strategy", "NO_SHARD"), "FSDP2 has no NO_SHARD"),
    (("--backend", "deepspeed", "x.yaml"), "with --backend deepspeed give the ds_config.json"),
    (("--backend", "fsdp", "ds_config.json"), "--backend fsdp reads an Accelerate FSDP config"),
])
def test_cli_option_mixups_are_one_line(args, fragment):
    one_line_error(run("--model", "gpt2", *args), fragment)


def test_remedies_are_command_lines_that_fit():
    base = ["--backend", "fsdp", "--model", "llama-3-8b", "--gpus", "2", "--gpu-mem", "40GB",
            "--sharding-strategy", "SHARD_GRAD_OP", "--gradient-checkpointing"]
    result = run(*base, "--format", "json")
    assert result.exit_code == 1, result.output
    remedies = json.loads(result.stdout)["remedies"]
    typed = [line.split(":")[0].split() for line in remedies if line.startswith("--")]
    assert any("--sharding-strategy" in words or "--offload-params" in words for words in typed), remedies
    for words in typed:
        after = run(*base, *words)
        assert after.exit_code == 0, (words, after.output)
