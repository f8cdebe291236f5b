"""`dsconfig generate`: a DeepSpeed config sized to the GPUs, with the plan that justifies it.

Three separate steps, each usable alone:

    from dsconfig.generate import Request, plan, render, write
    result = plan(Request(model=shape, gpu_memory=96 * 10**9, gpus=2, global_batch=64))   # pure
    files = render.files(result)                # [File(name, text)]: ds_config.json, accelerate_config.yaml, ...
    write.write_all("out", files, force=False)  # atomic, refuses to overwrite, never follows a link out

`planner` decides (stage, offload, checkpointing, precision, batch split, each with its reason)
against `dsconfig.estimate`; `render` fills the templates in `templates/`; `write` puts the files
on disk; `show` prints the plan; `command` is the click command. docs/generate.md has the rules.
"""

from .planner import LADDER, SHAPES, NoFit, Plan, PlanError, Request, Shape, plan

__all__ = ["LADDER", "SHAPES", "NoFit", "Plan", "PlanError", "Request", "Shape", "plan"]
