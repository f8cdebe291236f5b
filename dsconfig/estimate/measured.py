"""What measuring a torch.nn.Module (`--model-factory`) found, in the form the estimate and the
planner use: parameter counts, BatchNorm, and the saved activations as a function of the batch.

profile.py (torch) fills a `ModuleProfile`; this module is standard library only, so the
estimator and the planner read it without importing torch.

Activations are measured at a few batch sizes and extrapolated along the line through the two
largest: what a module saves for backward is per-sample tensors (growing with the batch) plus
per-channel ones (BatchNorm's mean and inverse std, which do not). The tests check the line
against direct measurements at other batch sizes for a conv net, a ResNet and a UNet.
"""

from __future__ import annotations

from dataclasses import dataclass

from .shapes import ModelShape

MODULE_FAMILY = "module"  # ModelShape.family of a --model-factory model


@dataclass(frozen=True)
class Line:
    """Bytes at the measured batch sizes; other batch sizes on the line through the two largest."""

    points: tuple[tuple[int, int], ...]  # (batch, bytes), increasing batch

    def at(self, batch: int) -> int:
        exact = dict(self.points)
        if batch in exact:
            return exact[batch]
        if len(self.points) == 1:
            b, y = self.points[0]
            return y * batch // b
        (b1, y1), (b2, y2) = self.points[-2:]
        return max(0, y2 + (y2 - y1) * (batch - b2) // (b2 - b1))


ZERO = Line(((1, 0),))


@dataclass(frozen=True)
class Activations:
    """One checkpointing setting: what forward leaves saved, and the largest block recomputed in backward."""

    kept: Line
    recompute: Line = ZERO

    def at(self, batch: int) -> tuple[int, int]:
        return self.kept.at(batch), self.recompute.at(batch)


@dataclass(frozen=True)
class ModuleProfile:
    spec: str  # module:function
    sample_shape: tuple[int, ...]  # the input without its batch dimension
    input_dtype: str
    parameters: int  # unique parameters, shared ones once
    trainable: int  # of which requires_grad=True
    largest_layer: int  # DeepSpeed's largest layer: the biggest module's direct parameters
    parameter_sizes: tuple[tuple[int, int], ...]  # (numel, how many parameters of that size)
    batchnorm: int  # BatchNorm layers (torch.nn.modules.batchnorm._BatchNorm, SyncBatchNorm included)
    plain: Activations
    checkpointed: Activations | None  # None: not measured, or nothing to checkpoint
    checkpointing: str  # how checkpointing was applied ("" when it was not)
    single_sample_error: str | None  # what torch raised for a batch of one (BatchNorm), if it did
    attention: str

    @property
    def frozen(self) -> int:
        return self.parameters - self.trainable

    def activations(self, checkpointing: bool) -> Activations:
        return self.checkpointed if checkpointing and self.checkpointed is not None else self.plain


def module_shape(profile: ModuleProfile) -> ModelShape:
    """The shape the model-state arithmetic needs; the transformer fields are unused placeholders."""
    return ModelShape(family=MODULE_FAMILY, layers=0, hidden=1, heads=1, kv_heads=1, head_dim=1, intermediate=1,
                      vocab=0, parameters=profile.parameters, trainable_parameters=profile.trainable,
                      largest_layer_params=profile.largest_layer, name=profile.spec,
                      extra={"parameter_sizes": profile.parameter_sizes})
