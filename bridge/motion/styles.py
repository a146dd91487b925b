"""Styles: which moves a style dances, how it feels, and free-text instructions mapped to a style.

Style ids are the AIST++ genres the dance manifest lists (bridge.models.motion.AIST_STYLES).
`energy` scales every move's amplitude; `phrase_bars` is how often the dancer changes moves (4 or 8
bars, or earlier at a novelty peak); `bounce` is a knee bounce under every move (0 = none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["STYLES", "Style", "style_for_text"]


@dataclass(frozen=True)
class Style:
    moves: tuple[str, ...]
    energy: float
    phrase_bars: int
    bounce: float


STYLES: dict[str, Style] = {
    "break": Style(("kick", "arm_pump", "turn", "march", "point"), 1.2, 4, 0.6),
    "pop": Style(("arm_wave", "body_roll", "point", "head_nod", "turn"), 0.9, 4, 0.3),
    "lock": Style(("point", "clap", "arm_pump", "kick", "head_nod"), 1.1, 4, 0.5),
    "middle_hiphop": Style(("bounce", "head_nod", "arm_pump", "step_touch", "turn"), 1.0, 4, 0.8),
    "la_hiphop": Style(("bounce", "shuffle", "arm_pump", "point", "hip_roll"), 1.0, 4, 0.8),
    "house": Style(("step_touch", "shuffle", "bounce", "march", "arm_wave", "clap"), 1.0, 8, 0.7),
    "waack": Style(("arm_wave", "point", "arm_pump", "sway"), 1.1, 4, 0.3),
    "krump": Style(("arm_pump", "kick", "body_roll", "march"), 1.3, 4, 0.6),
    "street_jazz": Style(("sway", "hip_roll", "body_roll", "point", "kick"), 0.9, 8, 0.3),
    "ballet_jazz": Style(("sway", "arm_wave", "turn", "hip_roll"), 0.7, 8, 0.1),
}

# Keyword → style, first match wins; then energy words scale the style's own energy.
_STYLE_WORDS: tuple[tuple[str, str], ...] = (
    (r"break|b-?boy|power", "break"),
    (r"pop(ping)?\b|robot", "pop"),
    (r"lock", "lock"),
    (r"krump|aggressive|angry", "krump"),
    (r"waa?ck|vogue", "waack"),
    (r"ballet|graceful|elegant", "ballet_jazz"),
    (r"jazz|smooth|slow|sexy", "street_jazz"),
    (r"la\b|west ?coast", "la_hiphop"),
    (r"hip ?hop|rap|groove", "middle_hiphop"),
    (r"house|club|techno|edm|disco", "house"),
)
_ENERGY_WORDS: tuple[tuple[str, float], ...] = (
    (r"very energetic|wild|crazy|explosive|intense", 1.4),
    (r"energetic|hype|fast|big|strong|power", 1.25),
    (r"calm|gentle|slow|soft|small|subtle|smooth|chill|relaxed", 0.6),
)


def style_for_text(text: str, default: str = "house") -> tuple[str, float]:
    """("energetic hip hop") → ("middle_hiphop", 1.25): a style id and an energy multiplier (1 = the
    style's own). Unknown words leave the default style at energy 1."""
    t = text.lower()
    style = next((s for pattern, s in _STYLE_WORDS if re.search(pattern, t)), default)
    energy = next((e for pattern, e in _ENERGY_WORDS if re.search(pattern, t)), 1.0)
    return style, energy
