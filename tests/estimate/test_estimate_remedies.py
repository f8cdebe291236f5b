"""When a setup does not fit, `estimate` says which single change would make it fit; each one, typed as
the command line it names, must then fit."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.estimate.test_estimate_cli import run


def with_remedy(args: list[str], remedy: str) -> list[str]:
    """The command line with the remedy's options replacing the same options in it."""
    flags = shlex.split(remedy.split(":", 1)[0])
    out, skip = [], False
    for index, word in enumerate(args):
        if skip:
            skip = False
            continue
        if word in flags and word.startswith("--") and word != "--gradient-checkpointing":
            skip = True  # the option and its value are replaced
            continue
        out.append(word)
    return out + flags


SETUPS = [
    ["--model", "llama-3.1-8b", "--gpus", "2", "--gpu-mem", "96GB", "--micro-batch", "4"],
    ["--model", "llama-3.1-8b", "--gpus", "2", "--gpu-mem", "96GB"],
    ["--model", "llama-3-8b", "--gpus", "8", "--gpu", "A100-40GB", "--micro-batch", "8", "--seq-len", "4096"],
    ["--params", "13B", "--gpus", "4", "--gpu", "H100-80GB", "--micro-batch", "2", "--zero-stage", "1"],
    ["--model", "llama-3.1-8b", "--gpu", "RTX4090", "--micro-batch", "6", "--zero-stage", "2"],
]


@pytest.mark.parametrize("args", SETUPS, ids=[" ".join(a[:2] + a[2:6]) for a in SETUPS])
def test_every_remedy_fits_when_typed(args):
    result = run(*args, "--format", "json")
    data = json.loads(result.stdout)
    assert data["fits"] is False and result.exit_code == 1
    remedies = [r for r in data["remedies"] if r.startswith("--")]
    assert remedies and data["remedies"][-1].startswith("dsconfig generate"), data["remedies"]
    for remedy in remedies:
        if "may fit" in remedy:
            continue
        changed = with_remedy(args, remedy)
        if "gradient accumulation" in remedy:  # the smaller micro batch is what must fit
            changed = with_remedy(args, remedy.split(" with ")[0])
        again = run(*changed, "--format", "json")
        assert json.loads(again.stdout)["fits"] is True, (remedy, changed)
        assert again.exit_code == 0


def test_the_table_lists_them_and_a_setup_that_fits_has_none():
    table = run(*SETUPS[0]).stdout
    assert "fits: no (" in table and "to fit, any one of:\n  --" in table
    fitting = run("--model", "llama-3.1-8b", "--gpus", "8", "--gpu", "H100-80GB", "--zero-stage", "3",
                  "--format", "json")
    assert json.loads(fitting.stdout)["fits"] is True and json.loads(fitting.stdout)["remedies"] == []


def test_accumulation_keeps_the_samples_per_optimizer_step():
    data = json.loads(run("--model", "llama-3.1-8b", "--gpu", "H100-80GB", "--zero-stage", "0", "--gpus", "8",
                          "--micro-batch", "12", "--gradient-checkpointing", "--format", "json").stdout)
    line = next((r for r in data["remedies"] if "accumulation" in r), None)
    if data["fits"] is False and line is not None and "the same" in line:
        micro = int(line.split()[1])
        steps = int(line.split("accumulation ")[1].split(":")[0])
        assert micro * steps == 12 and micro <= data["max_micro_batch"]
