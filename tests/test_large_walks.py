"""A walk over more files than the engine keeps parsed (engine.KEEP_PARSED) reports what a small one does:
there each DeepSpeed config is checked as it is read and its parse tree let go, and the check is done again
when the rest of the run changes its context (an Accelerate YAML that launches it, a script that builds
BatchNorm layers)."""

from __future__ import annotations

import json

from dsconfig import engine
from tests.helpers import lint_folder

ACCELERATE = """compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  deepspeed_config_file: ds_paired.json
num_processes: 4
"""
CLEAN = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0}


def _project(folder):
    folder.mkdir()
    (folder / "accelerate_config.yaml").write_text(ACCELERATE)
    # checked alone it fails at every world size but 2; launched by the YAML, at world size 4
    (folder / "ds_paired.json").write_text('{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, '
                                           '"gradient_accumulation_steps": 1, "zero_optimization": {"stage": 1}}')
    # an info alone; its note cites train.py's BatchNorm once the walk has read it
    (folder / "ds_config_bs1.json").write_text('{"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0}')
    (folder / "ds_config_typo.json").write_text('{"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0, '
                                                '"zero_optimization": {"stage": 2, "typo": 1}}')
    (folder / "train.py").write_text("import torch.nn as nn\n\nmodel = nn.Sequential(nn.Conv2d(3, 8, 3), "
                                     "nn.BatchNorm2d(8))\n")


def _seen(findings, folder):
    return sorted((f.file.split("/")[-1], f.line, f.column, f.code, f.message.replace(str(folder), "PROJECT"))
                  for f in findings if f.file.startswith(str(folder)))


def test_a_large_walk_reports_what_a_small_one_reports(tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    _project(small)
    _project(large)
    padding = large / "more"
    padding.mkdir()
    for index in range(engine.KEEP_PARSED + 10):
        (padding / f"ds_config_{index}.json").write_text(json.dumps(CLEAN))
    alone = _seen(lint_folder(small), small)
    together = _seen(lint_folder(large), large)
    codes = {code for _, _, _, code, _ in alone}
    assert {"DS205", "DS202", "DS101"} <= codes  # the context mattered
    assert any(file == "ds_config_bs1.json" and "builds BatchNorm at" in message
               for file, _, _, code, message in alone if code == "DS205")
    assert any(file == "ds_paired.json" and "world size 4" in message for file, _, _, code, message in alone
               if code == "DS202")
    assert together == alone
    assert not [f for f in lint_folder(padding)]
