"""Music-to-dance step model: a 2-layer LSTM with explicit recurrent state tensors."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from bridge.models._seed import seeded

__all__ = ["AIST_STYLES", "DanceLSTM", "build_dance_lstm", "load_dance_lstm"]

# AIST++ genre codes gBR, gPO, gLO, gMH, gLH, gHO, gWA, gKR, gJS, gJB, in that order.
AIST_STYLES: tuple[str, ...] = (
    "break",
    "pop",
    "lock",
    "middle_hiphop",
    "la_hiphop",
    "house",
    "waack",
    "krump",
    "street_jazz",
    "ballet_jazz",
)

N_FEATURES = 35  # FACT/AIST++ music features per frame
N_POSE = 75  # 24 SMPL joints x axis-angle (72) + root translation (3)
N_JOINT_VALUES = 72


class DanceLSTM(nn.Module):
    """features [B,T,35], pose_prev [B,75], style [B] int64, h_in/c_in [B,2,256]
    -> pose [B,T,75], h_out/c_out [B,2,256].

    Each step's LSTM input is concat(features_t, style embedding (16), tanh(projection of pose_prev) (64)).
    pose_prev is the last pose before this call: T=1 is the realtime step (the caller feeds each output
    back), T>1 generates a chunk conditioned on the pose before it. State is batch-first at the I/O
    (transposed inside) so that every tensor's batch axis is 0.

    The output is `pose_limit * tanh(head(h))`: pose_limit is a fixed buffer (0.6 rad per joint
    component, 0.1 m root translation) that bounds untrained output to a plausible range. A trained
    model would set the limit from the joint ranges it was trained on.
    """

    def __init__(
        self,
        hidden: int = 256,
        layers: int = 2,
        styles: int = len(AIST_STYLES),
        style_dim: int = 16,
        pose_dim: int = 64,
    ) -> None:
        super().__init__()
        self.hidden = hidden
        self.layers = layers
        self.style_embedding = nn.Embedding(styles, style_dim)
        self.pose_projection = nn.Linear(N_POSE, pose_dim)
        self.lstm = nn.LSTM(N_FEATURES + style_dim + pose_dim, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, N_POSE)
        limit = torch.full((N_POSE,), 0.6)
        limit[N_JOINT_VALUES:] = 0.1
        self.pose_limit: torch.Tensor
        self.register_buffer("pose_limit", limit)

    def reset_reference_weights(self) -> None:
        """Untrained init chosen so the untrained dance moves with the music and stays smooth:
        - first-layer input weights for the 35 music features are N(0, 0.3): features drive the gates,
          so beats and onsets visibly change the pose rather than the net settling into a fixed pose;
        - recurrent weights orthogonal x0.9 and forget-gate bias +1: state decays smoothly, no chaos;
        - head N(0, 1.2/sqrt(hidden)): pre-tanh output ~N(0, 0.5), so most joint values are well
          inside the +-0.6 rad bound instead of pinned at it.
        """
        h = self.hidden
        for name, p in self.lstm.named_parameters():
            if name.startswith("weight_hh"):
                for gate in range(4):
                    nn.init.orthogonal_(p.data[gate * h : (gate + 1) * h], gain=0.9)
            elif name.startswith("weight_ih"):
                nn.init.normal_(p, std=1.0 / p.shape[1] ** 0.5)
                if name == "weight_ih_l0":
                    nn.init.normal_(p.data[:, :N_FEATURES], std=0.3)
            else:
                nn.init.zeros_(p)
                if name.startswith("bias_ih"):
                    nn.init.constant_(p.data[h : 2 * h], 1.0)  # gate order i, f, g, o
        nn.init.normal_(self.style_embedding.weight, std=1.0)
        nn.init.normal_(self.pose_projection.weight, std=0.5 / N_POSE**0.5)
        nn.init.zeros_(self.pose_projection.bias)
        nn.init.normal_(self.head.weight, std=1.2 / h**0.5)
        nn.init.zeros_(self.head.bias)

    def forward(
        self,
        features: torch.Tensor,
        pose_prev: torch.Tensor,
        style: torch.Tensor,
        h_in: torch.Tensor,
        c_in: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        cond = torch.cat([self.style_embedding(style), torch.tanh(self.pose_projection(pose_prev))], dim=-1)
        cond = cond.unsqueeze(1).expand(-1, features.shape[1], -1)
        state = (h_in.transpose(0, 1).contiguous(), c_in.transpose(0, 1).contiguous())
        y, (h_out, c_out) = self.lstm(torch.cat([features, cond], dim=-1), state)
        pose = self.pose_limit * torch.tanh(self.head(y))
        return pose, h_out.transpose(0, 1), c_out.transpose(0, 1)

    def zero_state(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.zeros(batch, self.layers, self.hidden)
        return z, z.clone()


def build_dance_lstm(seed: int = 0) -> DanceLSTM:
    return seeded(DanceLSTM, seed)


def load_dance_lstm(path: Path) -> DanceLSTM:
    """Trained weights from a checkpoint of training.dance.train ({"state_dict", "training"})."""
    state = torch.load(path, weights_only=True)["state_dict"]
    model = DanceLSTM(hidden=int(state["lstm.weight_hh_l0"].shape[1]))
    model.load_state_dict(state)
    return model.eval()
