"""The 52 ARKit face blendshapes in Unreal's ``EARFaceBlendShape`` order.

That order is also the order of the Live Link Face UDP packet (see
shared/design/research/live-link-protocols.md §3). Apple's API names are the lowerCamel form of
the same words; other tools (Unity's ``ARKitBlendShapeLocation``, Apple's docs) list them
alphabetically, so anything crossing tool boundaries should map by name, not by index.
"""

from __future__ import annotations

ARKIT_NAMES: tuple[str, ...] = (
    "EyeBlinkLeft",
    "EyeLookDownLeft",
    "EyeLookInLeft",
    "EyeLookOutLeft",
    "EyeLookUpLeft",
    "EyeSquintLeft",
    "EyeWideLeft",
    "EyeBlinkRight",
    "EyeLookDownRight",
    "EyeLookInRight",
    "EyeLookOutRight",
    "EyeLookUpRight",
    "EyeSquintRight",
    "EyeWideRight",
    "JawForward",
    "JawLeft",
    "JawRight",
    "JawOpen",
    "MouthClose",
    "MouthFunnel",
    "MouthPucker",
    "MouthLeft",
    "MouthRight",
    "MouthSmileLeft",
    "MouthSmileRight",
    "MouthFrownLeft",
    "MouthFrownRight",
    "MouthDimpleLeft",
    "MouthDimpleRight",
    "MouthStretchLeft",
    "MouthStretchRight",
    "MouthRollLower",
    "MouthRollUpper",
    "MouthShrugLower",
    "MouthShrugUpper",
    "MouthPressLeft",
    "MouthPressRight",
    "MouthLowerDownLeft",
    "MouthLowerDownRight",
    "MouthUpperUpLeft",
    "MouthUpperUpRight",
    "BrowDownLeft",
    "BrowDownRight",
    "BrowInnerUp",
    "BrowOuterUpLeft",
    "BrowOuterUpRight",
    "CheekPuff",
    "CheekSquintLeft",
    "CheekSquintRight",
    "NoseSneerLeft",
    "NoseSneerRight",
    "TongueOut",
)

NUM_ARKIT = len(ARKIT_NAMES)

ARKIT_INDEX: dict[str, int] = {name: i for i, name in enumerate(ARKIT_NAMES)}


def to_apple_name(unreal_name: str) -> str:
    """``EyeBlinkLeft`` → ``eyeBlinkLeft`` (Apple's ARBlendShapeLocation API spelling)."""
    return unreal_name[:1].lower() + unreal_name[1:]


def to_unreal_name(apple_name: str) -> str:
    """``eyeBlinkLeft`` → ``EyeBlinkLeft`` (Unreal curve / EARFaceBlendShape spelling)."""
    return apple_name[:1].upper() + apple_name[1:]


ARKIT_APPLE_NAMES: tuple[str, ...] = tuple(to_apple_name(n) for n in ARKIT_NAMES)
