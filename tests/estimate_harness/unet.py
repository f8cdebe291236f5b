"""A diffusers-style conditional UNet (the shape of Stable Diffusion's UNet2DConditionModel) and a
ResNet with BatchNorm, as factories for `--model-factory`.

The UNet follows diffusers' layout: `down_blocks`, `mid_block`, `up_blocks` of ResNet blocks
(GroupNorm, SiLU, 3×3 convolutions, a time-embedding projection) and transformer blocks
(self-attention, cross-attention to a context, GEGLU feed-forward), each block list an
nn.ModuleList; blocks carry a `gradient_checkpointing` flag and the model an
`enable_gradient_checkpointing()` that sets `_gradient_checkpointing_func` on them, as diffusers
0.32+ does. An optional frozen encoder (`requires_grad=False`, like the frozen audio or reference
encoder of a lip-sync model) makes the context from the input.

Sizes: `width=320, context_dim=768` is Stable Diffusion 1.5's layout (894M here); `unet_850m` and
`unet_1_27b` are the two scenario models (851M parameters; 1.27B of which 661M trainable). Build them on the
meta device (the factories are called under `torch.device("meta")`): no memory is used.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def _groups(channels: int) -> int:
    return math.gcd(32, channels)


class ResnetBlock(nn.Module):
    def __init__(self, cin: int, cout: int, temb: int):
        super().__init__()
        self.norm1 = nn.GroupNorm(_groups(cin), cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb, cout)
        self.norm2 = nn.GroupNorm(_groups(cout), cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.shortcut(x) + h


class Attention(nn.Module):
    def __init__(self, dim: int, context_dim: int | None, heads: int):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(context_dim or dim, dim, bias=False)
        self.to_v = nn.Linear(context_dim or dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, context=None):
        context = x if context is None else context
        b = x.shape[0]

        def split(t):
            return t.reshape(b, -1, self.heads, t.shape[-1] // self.heads).transpose(1, 2)

        out = F.scaled_dot_product_attention(split(self.to_q(x)), split(self.to_k(context)), split(self.to_v(context)))
        return self.to_out(out.transpose(1, 2).reshape(b, -1, x.shape[-1]))


class GEGLU(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, 8 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)
        return self.out(value * F.gelu(gate))


class TransformerBlock(nn.Module):
    """diffusers' Transformer2DModel with one BasicTransformerBlock: norm, proj_in, self-attention,
    cross-attention, GEGLU feed-forward, proj_out, residual."""

    def __init__(self, dim: int, context_dim: int, heads: int = 8):
        super().__init__()
        self.norm = nn.GroupNorm(_groups(dim), dim)
        self.proj_in = nn.Linear(dim, dim)
        self.norm1, self.attn1 = nn.LayerNorm(dim), Attention(dim, None, heads)
        self.norm2, self.attn2 = nn.LayerNorm(dim), Attention(dim, context_dim, heads)
        self.norm3, self.ff = nn.LayerNorm(dim), GEGLU(dim)
        self.proj_out = nn.Linear(dim, dim)

    def forward(self, x, context):
        b, c, height, width = x.shape
        h = self.proj_in(self.norm(x).permute(0, 2, 3, 1).reshape(b, height * width, c))
        h = h + self.attn1(self.norm1(h))
        h = h + self.attn2(self.norm2(h), context)
        h = h + self.ff(self.norm3(h))
        h = self.proj_out(h).reshape(b, height, width, c).permute(0, 3, 1, 2)
        return x + h


class _Block(nn.Module):
    """A down or up block: ResNet blocks, each followed by a transformer block when `attention`."""

    def __init__(self, cins: list[int], cout: int, temb: int, context_dim: int, attention: bool, resample: str):
        super().__init__()
        self.resnets = nn.ModuleList(ResnetBlock(cin, cout, temb) for cin in cins)
        self.attentions = nn.ModuleList(TransformerBlock(cout, context_dim) for _ in cins) if attention else None
        self.resample = resample
        self.sampler = nn.Conv2d(cout, cout, 3, stride=2 if resample == "down" else 1, padding=1) if resample else None
        self.gradient_checkpointing = False

    def _call(self, module, *args):
        if torch.is_grad_enabled() and self.gradient_checkpointing:
            return self._gradient_checkpointing_func(module, *args)
        return module(*args)

    def forward(self, x, temb, context, skips=None):
        outputs = []
        for index, resnet in enumerate(self.resnets):
            if skips is not None:
                x = torch.cat([x, skips.pop()], dim=1)
            x = self._call(resnet, x, temb)
            if self.attentions is not None:
                x = self._call(self.attentions[index], x, context)
            outputs.append(x)
        if self.resample == "up":
            x = F.interpolate(x, scale_factor=2.0, mode="nearest")
        if self.sampler is not None:
            x = self.sampler(x)
            outputs.append(x)
        return x, outputs


class FrozenEncoder(nn.Module):
    """A frozen conditioning encoder (patchify, then transformer layers): context tokens from the input."""

    def __init__(self, channels: int, dim: int, layers: int):
        super().__init__()
        self.patchify = nn.Conv2d(channels, dim, 4, stride=4)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(dim, 8, 4 * dim, dropout=0.0, batch_first=True,
                                                               norm_first=True) for _ in range(layers))
        self.requires_grad_(False)

    def forward(self, x):
        h = self.patchify(x).flatten(2).transpose(1, 2)
        for layer in self.layers:
            h = layer(h)
        return h


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class UNet(nn.Module):
    """UNet2DConditionModel's layout: 4 levels (width × 1, 2, 4, 4), attention in the first three,
    2 ResNet blocks per down level and 3 per up level, a mid block."""

    _supports_gradient_checkpointing = True

    def __init__(self, channels: int = 4, width: int = 320, context_dim: int = 768, encoder_layers: int = 0,
                 context_tokens: int = 77):
        super().__init__()
        widths = [width, 2 * width, 4 * width, 4 * width]
        attention = [True, True, True, False]
        temb = 4 * width
        self.width = width
        self.conv_in = nn.Conv2d(channels, width, 3, padding=1)
        self.time_embedding = nn.Sequential(nn.Linear(width, temb), nn.SiLU(), nn.Linear(temb, temb))
        if encoder_layers:
            self.encoder = FrozenEncoder(channels, context_dim, encoder_layers)
        else:
            self.encoder = None
            self.context = nn.Parameter(torch.zeros(1, context_tokens, context_dim))  # a learned null context
        self.down_blocks = nn.ModuleList()
        skips = [width]
        cin = width
        for level, cout in enumerate(widths):
            last = level == len(widths) - 1
            self.down_blocks.append(_Block([cin, cout], cout, temb, context_dim, attention[level],
                                           "" if last else "down"))
            skips += [cout, cout] + ([] if last else [cout])
            cin = cout
        self.mid_block = _Block([cin, cin], cin, temb, context_dim, True, "")
        self.up_blocks = nn.ModuleList()
        for level, cout in reversed(list(enumerate(widths))):
            cins = []
            for _ in range(3):
                cins.append(cin + skips.pop())
                cin = cout
            self.up_blocks.append(_Block(cins, cout, temb, context_dim, attention[level], "" if level == 0 else "up"))
        self.conv_norm_out = nn.GroupNorm(_groups(width), width)
        self.conv_out = nn.Conv2d(width, channels, 3, padding=1)

    def enable_gradient_checkpointing(self):
        """diffusers 0.32+: every module with a `gradient_checkpointing` flag checkpoints its children."""
        def checkpoint(module, *args):
            return torch.utils.checkpoint.checkpoint(module.__call__, *args, use_reentrant=False)
        for module in self.modules():
            if hasattr(module, "gradient_checkpointing"):
                module._gradient_checkpointing_func = checkpoint
                module.gradient_checkpointing = True

    def forward(self, sample):
        b = sample.shape[0]
        t = torch.zeros(b, device=sample.device)
        temb = self.time_embedding(timestep_embedding(t, self.width).to(sample.dtype))
        context = self.encoder(sample) if self.encoder is not None else self.context.expand(b, -1, -1)
        x = self.conv_in(sample)
        skips = [x]
        for block in self.down_blocks:
            x, outputs = block(x, temb, context)
            skips += outputs
        x, _ = self.mid_block(x, temb, context)
        for block in self.up_blocks:
            x, _ = block(x, temb, context, skips)
        return self.conv_out(F.silu(self.conv_norm_out(x)))


def unet_tiny() -> nn.Module:
    """The same layout at width 32: fast enough for every test."""
    return UNet(width=32, context_dim=64)


def unet_tiny_frozen() -> nn.Module:
    return UNet(width=32, context_dim=64, encoder_layers=2)


def unet_850m() -> nn.Module:
    """Scenario 2: an 851M-parameter UNet (Stable Diffusion 1.5's layout), all trainable."""
    return UNet(width=312, context_dim=768)


def unet_1_27b() -> nn.Module:
    """Scenario 5: a 1.27B-parameter lip-sync UNet, 661M trainable, the rest (610M) a frozen
    Whisper-large-sized encoder (31 layers of width 1280)."""
    return UNet(width=272, context_dim=1280, encoder_layers=31)


# -- a ResNet with BatchNorm -------------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class ResNetBN(nn.Module):
    """A ResNet with BatchNorm2d in its blocks (an nn.Sequential of same-class blocks, no checkpointing
    method of its own) and a BatchNorm1d projection head after global pooling, which cannot
    normalise one sample ("Expected more than 1 value per channel when training")."""

    def __init__(self, channels: int = 3, width: int = 32, blocks: int = 4, sync: bool = False):
        super().__init__()
        norm = nn.SyncBatchNorm if sync else nn.BatchNorm2d
        self.stem = nn.Sequential(nn.Conv2d(channels, width, 3, padding=1, bias=False), norm(width), nn.ReLU())
        self.blocks = nn.Sequential(*(BasicBlock(width) for _ in range(blocks)))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, width),
                                  nn.BatchNorm1d(width), nn.ReLU(), nn.Linear(width, 10))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


def resnet_bn() -> nn.Module:
    return ResNetBN()


def resnet_syncbn() -> nn.Module:
    return ResNetBN(sync=True)
