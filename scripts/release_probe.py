"""Inside one DeepSpeed release's process: print its schema and its probed behaviour as JSON.

Run by scripts/build_releases.py with PYTHONPATH=<that release>; not meant to be run by hand.
The schema is scripts/build_schema.py's, built from this release's own models. The facts are what
the release's DeepSpeedConfig answers to small configs, for behaviour that lives in code rather than
in models: each probe is a config, a world size and the question asked of the verdict.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile

# name -> (config, world size, the error it asks about): the fact is true when this release's
# DeepSpeedConfig raises an error whose text holds those words ("" for any error), or, when the
# words are None, when it accepts the config.
PROBES = {
    # the batch arithmetic divides the world size by sequence_parallel_size
    "sequence_parallel_divides_world": ({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4,
                                          "sequence_parallel_size": 2}, 2, None),
    # ... also when deepspeed.initialize is given a path (releases without load_ds_config hand the path
    # on, and DeepSpeedConfig's `"sequence_parallel_size" in config` then looks inside the path's text)
    "sequence_parallel_read_from_a_path": ({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4,
                                            "sequence_parallel_size": 2}, 2, None),
    # ... and when that division raises, a bare `except:` makes the world size 1 (0.17.1 to 0.19.2)
    "sequence_parallel_error_means_world_1": ({"train_batch_size": 1, "train_micro_batch_size_per_gpu": 1,
                                                "sequence_parallel_size": 0}, 4, None),
    "gradient_allreduce_op_checked": ({"train_batch_size": 1, "gradient_allreduce_op": "avg"}, 1,
                                      "Invalid gradient_allreduce_op"),
    "gradient_allreduce_sum_zero3_rejected": ({"train_batch_size": 1, "gradient_allreduce_op": "sum",
                                               "zero_optimization": {"stage": 3}}, 1, "not supported with ZeRO"),
    "bf16_master_weights_needs_zero": ({"train_batch_size": 1, "bf16": {"enabled": True,
                                                                       "bf16_master_weights_and_grads": True}}, 1,
                                       "only supported with ZeRO"),
    **{f"communication_data_type_{name}": ({"train_batch_size": 1, "communication_data_type": name}, 1, None)
       for name in ("fp16", "bf16", "fp32", "bfp16")},
}


# name -> attribute of DeepSpeedConfig({"train_batch_size": 1}): defaults that live in code, not in a model
DEFAULTS = {"gradient_clipping_default": "gradient_clipping"}


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # DeepSpeed logs to stdout
    logging.disable(logging.CRITICAL)
    sys.path.insert(0, here)
    from release_compat import restore_older_names
    restore_older_names()
    import build_schema
    import deepspeed.comm as ds_comm
    from deepspeed.runtime.config import DeepSpeedConfig
    try:  # what deepspeed.initialize does with a path (tests/release_worker.py does the same)
        from deepspeed.runtime.tensor_parallel.init_utils import load_ds_config
    except ImportError:
        load_ds_config = None
    facts = {}
    scratch = tempfile.TemporaryDirectory()
    for name, (config, world, words) in PROBES.items():
        ds_comm.get_world_size = lambda group=None, size=world: size
        ds_comm.get_rank = lambda group=None: 0
        handed = json.loads(json.dumps(config))
        if name.endswith("_from_a_path"):
            handed = os.path.join(scratch.name, "ds_config.json")
            with open(handed, "w") as handle:
                json.dump(config, handle)
            if load_ds_config is not None:
                handed = load_ds_config(handed)
        try:
            DeepSpeedConfig(handed)
            error = None
        except Exception as exc:  # the verdict is the point
            error = f"{type(exc).__name__}: {exc}"
        facts[name] = error is None if words is None else error is not None and words in error
    scratch.cleanup()
    ds_comm.get_world_size = lambda group=None: 1
    parsed = DeepSpeedConfig({"train_batch_size": 1})
    for name, attribute in DEFAULTS.items():
        facts[name] = getattr(parsed, attribute)
    json.dump({"schema": build_schema.build(), "facts": facts}, answers)
    answers.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
