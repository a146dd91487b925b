"""Face expression encoders: image crop -> FLAME expression, jaw, head pose (and eyelids)."""

from __future__ import annotations

import math

import torch
from torch import nn

from bridge.models._seed import seeded
from bridge.models.resnet import ResNet

__all__ = ["DECA_LAYOUT", "EmocaSizeNet", "FaceExpressionNet", "build_emoca_size", "build_face_small"]

N_EXPRESSION = 50

# DECA's coarse parameter vector ([B,236]), in cfg.model.param_list order.
DECA_LAYOUT: dict[str, tuple[int, int]] = {
    "shape": (0, 100),
    "tex": (100, 150),
    "exp": (150, 200),
    "global_pose": (200, 203),
    "jaw_pose": (203, 206),
    "cam": (206, 209),
    "light": (209, 236),
}
DECA_PARAMS = 236


def _conv(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1), nn.ReLU(inplace=True))


class FaceExpressionNet(nn.Module):
    """Small CNN for the CPU default: [B,3,224,224] RGB in [0,1] -> expression 50, jaw 3, head 3, eyelids 2.

    Five stride-2 3x3 convolutions (224 -> 7) with two extra stride-1 convolutions at 28 and 14 pixels,
    global average pooling and a two-layer head: ~0.5 M parameters, ~90 M MACs per frame.
    """

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _conv(3, 16, 2),  # 112
            _conv(16, 32, 2),  # 56
            _conv(32, 64, 2),  # 28
            _conv(64, 64, 1),
            _conv(64, 128, 2),  # 14
            _conv(128, 128, 1),
            _conv(128, 256, 2),  # 7
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.head = nn.Sequential(nn.Linear(256, 256), nn.ReLU(inplace=True), nn.Linear(256, 58))

    def reset_reference_weights(self) -> None:
        """Untrained reference init. Kaiming convs keep activations O(1); the last layer's rows are
        scaled per output group so untrained outputs land in plausible ranges (expression values within
        about +-0.5, jaw and head rotations a few hundredths of a radian, eyelids around 0.5)."""
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        last = self.head[-1]
        assert isinstance(last, nn.Linear)
        with torch.no_grad():
            std = torch.cat([torch.full((50,), 1.0), torch.full((6,), 0.05), torch.full((2,), 0.5)])
            last.weight.normal_().mul_((std / math.sqrt(last.in_features)).unsqueeze(1))

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        out = self.head(self.features(image - 0.5))
        return out[:, :50], out[:, 50:53], out[:, 53:56], torch.sigmoid(out[:, 56:58])


class EmocaSizeNet(nn.Module):
    """EMOCA-sized encoder pair, as EMOCA runs them: two ResNet-50 passes per frame.

    `coarse` is DECA's E_flame (ResNet-50 -> 2048 -> 1024 -> 236 DECA parameters); `expression` is
    EMOCA's E_expression (ResNet-50 -> 2048 -> 1024 -> 50). Its 50 values replace the `exp` slot of
    the 236-vector, which is the single output tensor `params` ([B,236], DECA_LAYOUT). `layers` and
    `base_width` shrink it for tests; the defaults are ResNet-50.
    """

    def __init__(self, layers: tuple[int, int, int, int] = (3, 4, 6, 3), base_width: int = 64) -> None:
        super().__init__()
        self.coarse_encoder = ResNet(layers, base_width)
        self.coarse_head = nn.Sequential(
            nn.Linear(self.coarse_encoder.out_features, 1024),
            nn.ReLU(inplace=True),
            nn.Linear(1024, DECA_PARAMS),
        )
        self.expression_encoder = ResNet(layers, base_width)
        self.expression_head = nn.Sequential(
            nn.Linear(self.expression_encoder.out_features, 1024),
            nn.ReLU(inplace=True),
            nn.Linear(1024, N_EXPRESSION),
        )

    def reset_reference_weights(self) -> None:
        """Untrained reference init: ResNets as ResNet.reset_reference_weights; heads Kaiming, with the
        last layers scaled down so rotations stay small and expression values ~N(0,0.5)."""
        self.coarse_encoder.reset_reference_weights()
        self.expression_encoder.reset_reference_weights()
        for head, scale in ((self.coarse_head, 0.05), (self.expression_head, 0.5)):
            for m in head.modules():
                if isinstance(m, nn.Linear):
                    nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                    nn.init.zeros_(m.bias)
            last = head[-1]
            assert isinstance(last, nn.Linear)
            with torch.no_grad():
                last.weight.mul_(scale / math.sqrt(2.0))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        coarse = self.coarse_head(self.coarse_encoder(image))
        expression = self.expression_head(self.expression_encoder(image))
        exp_start, exp_end = DECA_LAYOUT["exp"]
        return torch.cat([coarse[:, :exp_start], expression, coarse[:, exp_end:]], dim=1)


def build_face_small(seed: int = 0) -> FaceExpressionNet:
    return seeded(FaceExpressionNet, seed)


def build_emoca_size(
    seed: int = 0, layers: tuple[int, int, int, int] = (3, 4, 6, 3), base_width: int = 64
) -> EmocaSizeNet:
    return seeded(lambda: EmocaSizeNet(layers, base_width), seed)
