"""Small non-transformer models: a CNN with BatchNorm and a two-level UNet.

Each factory returns an nn.Module; `expected_cnn_bytes` is the saved-tensor count of the CNN
worked out by hand from PyTorch's autograd formulas, so the measurement itself is checked.
"""

from __future__ import annotations

import torch
from torch import nn


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    )


def expected_cnn_bytes(batch: int, size: int, dt: int) -> int:
    """conv keeps its input; batch norm its input and fp32 mean and invstd per channel; ReLU its
    output (the next conv's input); the average pool keeps nothing; the linear its input."""
    pixels = batch * size * size
    total = dt * 3 * pixels  # conv1 input
    total += dt * 16 * pixels + 2 * 4 * 16  # bn1 input, save_mean, save_invstd
    total += dt * 16 * pixels  # relu1 output (conv2 input)
    total += dt * 32 * pixels + 2 * 4 * 32  # bn2
    total += dt * 32 * pixels  # relu2 output
    total += dt * batch * 32  # linear input (the flattened pool output)
    return total


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU(),
                                  nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())

    def forward(self, x):
        return self.body(x)


class UNet(nn.Module):
    def __init__(self, channels: int = 3, width: int = 32):
        super().__init__()
        self.down1 = _Block(channels, width)
        self.down2 = _Block(width, 2 * width)
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ConvTranspose2d(2 * width, width, 2, stride=2)
        self.out_block = _Block(2 * width, width)
        self.head = nn.Conv2d(width, channels, 1)

    def forward(self, x):
        skip = self.down1(x)
        bottom = self.down2(self.pool(skip))
        return self.head(self.out_block(torch.cat([self.up(bottom), skip], dim=1)))


def unet() -> nn.Module:
    return UNet()


def half_frozen() -> nn.Module:
    """Four Linear+GELU blocks and a head; the first two blocks are frozen (requires_grad=False), as a
    fine-tuning script freezes an encoder: 8,320 of the 16,705 parameters."""
    model = nn.Sequential(*(nn.Sequential(nn.Linear(64, 64), nn.GELU()) for _ in range(4)), nn.Linear(64, 1))
    for block in list(model)[:2]:
        block.requires_grad_(False)
    return model
