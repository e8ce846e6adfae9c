"""ResNet: d2l's ``Residual`` block and the small ``resnet18`` of its multi-GPU chapter."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["Residual", "resnet18"]


class Residual(nn.Module):
    """A residual block: two 3x3 convolutions with batch norm, plus the input (d2l's ``Residual``).

    input (N, input_channels, H, W) -> output (N, num_channels, H / strides, W / strides):
    ``relu(bn2(conv2(relu(bn1(conv1(X))))) + shortcut(X))``. The shortcut is the input itself,
    or a 1x1 convolution with ``strides`` when ``use_1x1conv`` (needed whenever the channels or
    the stride change).
    """

    def __init__(self, input_channels: int, num_channels: int, use_1x1conv: bool = False, strides: int = 1):
        super().__init__()
        if not use_1x1conv and (input_channels != num_channels or strides != 1):
            raise ValueError(f"Residual: {input_channels} -> {num_channels} channels with stride {strides} "
                             "changes the shape, so the input cannot be added back; pass use_1x1conv=True")
        self.conv1 = nn.Conv2d(input_channels, num_channels, kernel_size=3, padding=1, stride=strides)
        self.conv2 = nn.Conv2d(num_channels, num_channels, kernel_size=3, padding=1)
        self.conv3 = nn.Conv2d(input_channels, num_channels, kernel_size=1, stride=strides) if use_1x1conv else None
        self.bn1 = nn.BatchNorm2d(num_channels)
        self.bn2 = nn.BatchNorm2d(num_channels)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        Y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(X)))))
        shortcut = self.conv3(X) if self.conv3 is not None else X
        return F.relu(Y + shortcut)


def _stage(in_channels: int, out_channels: int, first: bool) -> nn.Sequential:
    """Two residual blocks; all but the first stage halve height and width and change channels."""
    if first:
        return nn.Sequential(Residual(in_channels, out_channels), Residual(out_channels, out_channels))
    return nn.Sequential(Residual(in_channels, out_channels, use_1x1conv=True, strides=2),
                         Residual(out_channels, out_channels))


def resnet18(num_classes: int, in_channels: int = 1) -> nn.Sequential:
    """The ResNet-18 variant of d2l's multi-GPU chapter, for small images such as 28x28 digits.

    input (N, in_channels, H, W) -> (N, num_classes) scores. A 3x3 convolution (stride 1, no
    max-pooling, unlike ImageNet's ResNet-18) with batch norm and ReLU, four stages of two
    residual blocks (64, 128, 256, 512 channels), global average pooling, one linear layer.
    Children are named as in d2l (``resnet_block1`` ... ``fc``), so state dicts match.
    """
    net = nn.Sequential(nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1),
                        nn.BatchNorm2d(64), nn.ReLU())
    for i, (cin, cout) in enumerate([(64, 64), (64, 128), (128, 256), (256, 512)], start=1):
        net.add_module(f"resnet_block{i}", _stage(cin, cout, first=i == 1))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1, 1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(), nn.Linear(512, num_classes)))
    return net
