"""`--model-factory` for modules that are not LLMs: gradient checkpointing (the model's own method or
its repeated blocks) with the recompute peak, frozen parameters, BatchNorm, the activations' line in
the batch, and a header and JSON without transformer fields. Oracles: torch itself (a real CPU
training step; saved tensors counted through forward hooks per block; direct measurements at
other batch sizes)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dsconfig.estimate import profile
from tests.estimate.test_estimate_cli import run, run_json
from tests.estimate_harness import models, unet

UNET = "tests.estimate_harness.unet:unet_tiny"
UNET_FROZEN = "tests.estimate_harness.unet:unet_tiny_frozen"
RESNET = "tests.estimate_harness.unet:resnet_bn"
CNN = "tests.estimate_harness.models:cnn"
LLM_FIELDS = ("layers", "hidden_size", "attention_heads", "key_value_heads", "intermediate_size", "vocab_size",
              "tied_embeddings")



def largest_block_by_hooks(model, blocks, x) -> int:
    """The most one block saves of its own in a plain forward, counted by the per-block forward hooks
    of profile._Recorder (the path the HF measurement uses), not by the checkpoint probe."""
    recorder = profile._Recorder(model, blocks)
    with torch.autograd.graph.saved_tensors_hooks(recorder.pack, lambda t: t):
        model(x).float().mean()
    recorder.close()
    return recorder.largest_unit()


@pytest.mark.parametrize("spec, blocks, how", [
    (UNET, lambda m: [b for block in m.modules() if isinstance(block, unet._Block)
                      for b in (*block.resnets, *(block.attentions or ()))], "model.enable_gradient_checkpointing()"),
    (RESNET, lambda m: list(m.blocks), "torch.utils.checkpoint around each of the 4 BasicBlock blocks of `blocks`"),
])
def test_checkpointing_lowers_activations_and_adds_the_recompute_peak(spec, blocks, how):
    measured = profile.profile_factory(spec, (3 if spec == RESNET else 4, 32, 32), batches=(2, 4),
                                       checkpointing=(False, True), attention="eager")
    assert measured.checkpointing == how
    for batch in (2, 4):
        plain, _ = measured.plain.at(batch)
        kept, recompute = measured.checkpointed.at(batch)
        assert kept < plain / 2 and kept + recompute < plain  # the blocks' insides are no longer kept
        model = profile.build_factory_model(spec)
        x = torch.empty(batch, *measured.sample_shape, dtype=torch.bfloat16, device="meta")
        assert recompute == largest_block_by_hooks(model.train(), blocks(model), x)
    data, _ = run_json("--model-factory", spec, "--input-shape", f"2,{','.join(map(str, measured.sample_shape))}",
                       "--gradient-checkpointing", "--attention", "eager")
    assert data["per_gpu_bytes"]["activations"] == sum(measured.checkpointed.at(2))
    assert data["activation_bytes"]["recomputed_layer"] == measured.checkpointed.recompute.at(2) > 0
    assert data["model"]["gradient_checkpointing"] == how
    without, _ = run_json("--model-factory", spec, "--input-shape", f"2,{','.join(map(str, measured.sample_shape))}",
                          "--attention", "eager")
    assert without["per_gpu_bytes"]["activations"] == measured.plain.at(2)[0]


def test_nothing_to_checkpoint_is_said():
    data, _ = run_json("--model-factory", CNN, "--input-shape", "4,3,32,32", "--gradient-checkpointing")
    assert data["model"]["gradient_checkpointing"] is None
    assert any("nothing to checkpoint" in note for note in data["notes"])
    assert data["per_gpu_bytes"]["activations"] == models.expected_cnn_bytes(4, 32, 2)


@pytest.mark.parametrize("spec, sample", [(CNN, (3, 32, 32)), (RESNET, (3, 32, 32)), (UNET, (4, 32, 32)),
                                          ("tests.estimate_harness.models:unet", (3, 64, 64))])
def test_activations_follow_the_line_through_two_batches(spec, sample):
    """What the planner reads off the line (measured at 2 and 4) is what measuring at that batch gives."""
    line = profile.profile_factory(spec, sample, batches=(2, 4), checkpointing=(False, True), attention="eager")
    direct = profile.profile_factory(spec, sample, batches=(3, 5, 8, 16), checkpointing=(False, True),
                                     attention="eager")
    for batch in (3, 5, 8, 16):
        assert line.plain.at(batch) == direct.plain.at(batch), batch
        if line.checkpointed is not None:
            assert line.checkpointed.at(batch) == direct.checkpointed.at(batch), batch


def test_frozen_parameters_have_no_gradients_or_optimizer_states_in_a_real_step():
    """fp32, ZeRO-0: a real forward, backward and AdamW step on CPU with the trainable parameters (what
    the HF Trainer and Accelerate scripts pass) holds exactly the gradient and state bytes the estimate says."""
    model = models.half_frozen()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable)
    model(torch.randn(8, 64)).mean().backward()
    optimizer.step()
    gradient_bytes = sum(p.grad.nbytes for p in model.parameters() if p.grad is not None)
    state_bytes = sum(state[key].nbytes for state in optimizer.state.values() for key in ("exp_avg", "exp_avg_sq"))
    weight_bytes = sum(p.nbytes for p in model.parameters())
    data, _ = run_json("--model-factory", "tests.estimate_harness.models:half_frozen", "--input-shape", "8,64",
                       "--precision", "fp32")
    assert data["per_gpu_bytes"]["parameters"] == weight_bytes
    assert data["per_gpu_bytes"]["gradients"] == gradient_bytes
    assert data["per_gpu_bytes"]["optimizer_states"] == state_bytes
    assert data["model"]["frozen_parameters"] == sum(p.numel() for p in model.parameters() if not p.requires_grad)
    assert data["model"]["trainable_parameters"] == sum(p.numel() for p in trainable)


def test_factory_header_and_json_have_no_transformer_fields():
    data, code = run_json("--model-factory", UNET_FROZEN, "--input-shape", "2,4,32,32", "--gpu-mem", "80GB")
    assert code == 0
    model = unet.unet_tiny_frozen()
    assert not set(LLM_FIELDS) & set(data["model"])
    assert "seq_len" not in data["setup"]
    assert data["model"]["family"] == "module" and data["model"]["input_shape"] == [4, 32, 32]
    assert data["model"]["parameters"] == sum(p.numel() for p in model.parameters())
    assert data["model"]["trainable_parameters"] == sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert data["model"]["batchnorm"] is False and data["errors"] == []
    assert sum(data["per_gpu_bytes"][key] for key in data["per_gpu_bytes"] if key != "total") == \
        data["per_gpu_bytes"]["total"]
    table = run("--model-factory", UNET_FROZEN, "--input-shape", "2,4,32,32", "--gpu-mem", "80GB").stdout
    header = table.split("\n\n")[0]
    assert "frozen" in header and "input 4×32×32" in header
    for word in ("seq ", "layers", "heads", "vocab"):
        assert word not in header, header


@pytest.mark.parametrize("spec", [RESNET, "tests.estimate_harness.unet:resnet_syncbn"])
def test_batchnorm_at_one_sample_per_gpu_is_an_error(spec):
    data, code = run_json("--model-factory", spec, "--input-shape", "1,3,32,32", "--gpu-mem", "80GB")
    assert code == 1 and data["fits"] is True
    assert data["model"]["batchnorm"] is True and data["model"]["batchnorm_layers"] == 10
    assert len(data["errors"]) == 1 and "Expected more than 1 value per channel when training" in data["errors"][0]
    table = run("--model-factory", spec, "--input-shape", "1,3,32,32", "--gpu-mem", "80GB")
    assert table.exit_code == 1 and "\nerror: micro batch 1: " in table.stdout
    data, code = run_json("--model-factory", spec, "--input-shape", "2,3,32,32", "--gpu-mem", "80GB")
    assert code == 0 and data["errors"] == []


def test_batchnorm_that_torch_runs_at_one_sample_is_still_reported():
    """The small CNN's BatchNorm2d sees 32×32 values per channel, so torch runs one sample; the
    statistics are then one sample's own, and the estimate says so (exit 1) without claiming a crash."""
    data, code = run_json("--model-factory", CNN, "--input-shape", "1,3,32,32")
    assert code == 1 and "single-sample statistics" in data["errors"][0]


def test_params_alone_says_it_assumes_a_decoder_llm():
    data, _ = run_json("--params", "7B")
    assert any("decoder-only LLM" in note for note in data["notes"])
    data, _ = run_json("--params", "7B", "--layers", "32")
    assert not any("decoder-only LLM" in note for note in data["notes"])


@pytest.mark.parametrize("args, fragment", [
    (["--model-factory", "no_colon", "--input-shape", "1,3"], "MODULE:FUNCTION"),
    (["--model-factory", "os:getcwd", "--input-shape", "1,3"], "not a torch.nn.Module"),
    (["--model-factory", "no_such_module:f", "--input-shape", "1,3"], "no module named 'no_such_module'"),
    (["--model-factory", "tests.estimate_harness.models:no_such", "--input-shape", "1,3"], "no_such"),
    (["--model-factory", CNN, "--input-shape", "2,5,32,32"], "RuntimeError"),  # 5 channels into a 3-channel conv
    (["--model-factory", CNN, "--input-shape", "2"], "needs a batch and"),
    (["--model-factory", CNN, "--input-shape", "2,3,0,32"], "positive"),
    (["--model-factory", CNN, "--input-shape", "2,3,x,32"], "positive integers"),
    (["--model-factory", CNN, "--input-shape", "2,3," + "9" * 40], "40-digit"),
    (["--model-factory", CNN, "--input-shape", "2,3,32,32", "--params", "7B"], "alone"),
])
def test_factory_errors_are_one_line(args, fragment):
    result = run(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsconfig estimate: error: ") and fragment in lines[0], lines
