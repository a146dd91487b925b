"""ResNet-50 (bottleneck ResNet, He et al. 2016) as a feature encoder, written here because
torchvision is not installable in this project's environments. Same topology as torchvision's
resnet50 up to global pooling (stride on the 3x3 conv, "ResNet v1.5"), without the classifier."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["Bottleneck", "ResNet"]


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        out = planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        out: torch.Tensor = self.relu(y + identity)
        return out


class ResNet(nn.Module):
    """Bottleneck ResNet backbone -> globally pooled [B, out_features] features."""

    def __init__(self, layers: tuple[int, int, int, int] = (3, 4, 6, 3), base_width: int = 64) -> None:
        super().__init__()
        w = base_width
        self.conv1 = nn.Conv2d(3, w, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        stages: list[nn.Module] = []
        inplanes = w
        for i, blocks in enumerate(layers):
            planes = w * 2**i
            stage = []
            for b in range(blocks):
                stage.append(Bottleneck(inplanes, planes, stride=2 if (i > 0 and b == 0) else 1))
                inplanes = planes * Bottleneck.expansion
            stages.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.out_features = inplanes

    def reset_reference_weights(self) -> None:
        """torchvision's init (Kaiming fan-out convs, unit BN), but each block's last BN scale is 0.2:
        with untrained eval-mode BN the residual sum would otherwise grow block after block, and fp16
        / INT8 benchmark paths need activations in a sane range."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        for m in self.modules():
            if isinstance(m, Bottleneck):
                nn.init.constant_(m.bn3.weight, 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        pooled: torch.Tensor = self.avgpool(x)
        return torch.flatten(pooled, 1)
