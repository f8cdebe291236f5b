"""Per-GPU training memory: model states exact to DeepSpeed's estimators, activations as autograd saves them.

    from dsconfig.estimate import estimate, TrainingSetup, Hardware, shapes, catalog
    model = shapes.from_hf_config(catalog.CATALOG["llama-3-8b"].config, "llama-3-8b")
    result = estimate(model, TrainingSetup(seq_len=4096, micro_batch=2, zero_stage=3, gpus=8),
                      Hardware(gpu_memory=80 * 10**9))
    result.per_gpu["total"], result.fits, result.max_micro_batch

Standard library only (torch/transformers are imported by `profile` alone). docs/estimate.md has
the formulas and how exact each part is.
"""

from .estimator import Estimate, Hardware, TrainingSetup, estimate
from .memory import Buckets
from .shapes import ModelShape, from_hf_config, from_params

__all__ = ["Buckets", "Estimate", "Hardware", "ModelShape", "TrainingSetup", "estimate", "from_hf_config",
           "from_params"]
