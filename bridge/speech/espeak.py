"""Speech with known phoneme timing, synthesized by eSpeak NG (Debian's `espeak-ng`) through its C API.

The command line's `--pho` output only works with MBROLA voices, so this drives libespeak-ng directly
(ctypes, synchronous mode) and records its phoneme events: each carries the sample at which the
phoneme starts in the audio the same call returns, which makes the ground truth exact by
construction. Used to make training, test and benchmark data and the demo's voice; the bridge
itself never needs eSpeak.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bridge.speech.visemes import SIL, viseme_of

__all__ = ["Utterance", "synthesize", "viseme_track"]

_LIBRARY = "espeak-ng"
_SYNCHRONOUS = 2  # espeak_AUDIO_OUTPUT: AUDIO_OUTPUT_SYNCHRONOUS
_PHONEME_EVENTS = 0x0001  # espeakINITIALIZE_PHONEME_EVENTS
_CHARS_UTF8 = 1
_PHONEMES_INPUT = 0x100  # espeakPHONEMES: [[...]] in the text is phoneme mnemonics
_EVENT_END_OF_LIST, _EVENT_PHONEME = 0, 7
_RATE, _PITCH, _RANGE = 1, 3, 4  # espeak_PARAMETER


class _Event(ctypes.Structure):  # espeak_EVENT (speak_lib.h)
    _fields_ = (
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_char * 8),  # union; phoneme events carry the mnemonic as a string
    )


_Callback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)


@dataclass(frozen=True)
class Utterance:
    audio: npt.NDArray[np.int16]  # mono PCM
    rate: int
    phonemes: tuple[tuple[int, str], ...]  # (first sample, eSpeak mnemonic), in order


class _Engine:
    """libespeak-ng is one global synthesizer: one instance, calls serialised by a lock."""

    _instance: _Engine | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        path = ctypes.util.find_library(_LIBRARY) or "libespeak-ng.so.1"
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as exc:
            raise RuntimeError(
                "eSpeak NG is not installed (Debian/Ubuntu: apt-get install espeak-ng)"
            ) from exc
        self.rate = int(self.lib.espeak_Initialize(_SYNCHRONOUS, 0, None, _PHONEME_EVENTS))
        if self.rate <= 0:
            raise RuntimeError("eSpeak NG failed to initialise (is espeak-ng-data installed?)")
        self.chunks: list[npt.NDArray[np.int16]] = []
        self.events: list[tuple[int, str]] = []
        self._callback = _Callback(self._on_audio)  # kept referenced for as long as the library may call it
        self.lib.espeak_SetSynthCallback(self._callback)
        self.lib.espeak_Synth.argtypes = (
            ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint, ctypes.c_uint,
            ctypes.c_void_p, ctypes.c_void_p,
        )  # fmt: skip

    @classmethod
    def get(cls) -> _Engine:
        if cls._instance is None:
            cls._instance = _Engine()
        return cls._instance

    def _on_audio(self, wav: ctypes._Pointer[ctypes.c_short], n: int, events: ctypes._Pointer[_Event]) -> int:
        if n > 0:
            self.chunks.append(np.ctypeslib.as_array(wav, (n,)).astype(np.int16))
        i = 0
        while events[i].type != _EVENT_END_OF_LIST:
            if events[i].type == _EVENT_PHONEME:
                self.events.append((int(events[i].sample), events[i].id.decode("ascii", "replace")))
            i += 1
        return 0

    def speak(self, text: str, voice: str, words_per_minute: int, pitch: int, pitch_range: int) -> Utterance:
        if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise ValueError(f"eSpeak NG has no voice {voice!r} (see `espeak-ng --voices`)")
        for parameter, value in ((_RATE, words_per_minute), (_PITCH, pitch), (_RANGE, pitch_range)):
            self.lib.espeak_SetParameter(parameter, value, 0)
        data = text.encode()
        self.chunks, self.events = [], []
        flags = _CHARS_UTF8 | _PHONEMES_INPUT
        self.lib.espeak_Synth(data, len(data) + 1, 0, 0, 0, flags, None, None)
        self.lib.espeak_Synchronize()
        audio = np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.int16)
        return Utterance(audio, self.rate, tuple(self.events))


def synthesize(
    text: str, voice: str = "en-us", *, words_per_minute: int = 175, pitch: int = 50, pitch_range: int = 50
) -> Utterance:
    """Speak `text` (`[[...]]` spans are eSpeak phoneme mnemonics) with `voice` (e.g. "en-us+f3")."""
    with _Engine._lock:
        return _Engine.get().speak(text, voice, words_per_minute, pitch, pitch_range)


def viseme_track(utterance: Utterance, fps: float) -> npt.NDArray[np.int64]:
    """The viseme being spoken at each frame time j/fps (silence before the first phoneme)."""
    n = int(len(utterance.audio) * fps / utterance.rate) + 1
    frame_samples = np.arange(n) * utterance.rate / fps
    starts = np.array([s for s, _ in utterance.phonemes], np.float64)
    labels = np.array([viseme_of(p) for _, p in utterance.phonemes] or [SIL], np.int64)
    idx = np.searchsorted(starts, frame_samples, side="right") - 1
    track: npt.NDArray[np.int64] = np.where(idx >= 0, labels[np.maximum(idx, 0)], SIL)
    return track
