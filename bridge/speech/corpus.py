"""The synthetic speech corpus: our own sentences, eSpeak NG voices split into training and held-out.

Held-out means both: test utterances use voice variants AND sentences the classifier never saw.
Everything is generated on demand (a sentence takes ~40 ms to synthesize); nothing is stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bridge.speech.espeak import Utterance, synthesize
from bridge.speech.visemes import VRM_VOWELS

LANGUAGES = ("en-us", "es", "de", "fr", "it")
# eSpeak NG voice variants (formant and pitch settings). Their speakers never overlap.
TRAIN_VARIANTS = ("m1", "m2", "m3", "m4", "f1", "f2", "f3", "klatt", "Andy", "Alicia")
TEST_VARIANTS = ("m6", "f4", "Annie", "Gene")

_TRAIN = {
    "en-us": (
        "The quick brown fox jumps over the lazy dog.",
        "Please bring me a cup of warm tea with milk.",
        "We will meet at the old bridge near the river tomorrow morning.",
        "She sells sea shells by the sea shore.",
        "My favourite colour is a deep shade of blue.",
        "Turn left at the second light, then walk straight ahead.",
        "Nobody knew why the clock stopped at noon.",
        "Thank you very much for your kind help today.",
        "Fresh bread smells wonderful in the early hours.",
        "How much wood would a woodchuck chuck?",
        "Zebras and giraffes live on the open plains.",
        "Each judge thought the choice was rather fair.",
    ),
    "es": (
        "El perro corre rápido por el parque verde.",
        "Mañana vamos a la playa con mis amigos.",
        "La casa de mi abuela tiene un jardín precioso.",
        "Por favor, cierra la puerta cuando salgas.",
        "Me gusta mucho el chocolate caliente en invierno.",
        "El tren llega a las ocho de la noche.",
        "Hoy el cielo está despejado y hace calor.",
        "Los niños juegan al fútbol en la calle.",
    ),
    "de": (
        "Der Hund spielt gern im großen Garten.",
        "Morgen fahren wir mit dem Zug nach Berlin.",
        "Bitte schließ das Fenster, es wird kalt.",
        "Ich trinke jeden Morgen eine Tasse Kaffee.",
        "Die Kinder lesen ein spannendes Buch.",
        "Im Sommer schwimmen wir oft im See.",
        "Das Wetter ist heute wirklich schön.",
        "Wir kaufen frisches Obst auf dem Markt.",
    ),
    "fr": (
        "Le chat dort sur le canapé du salon.",
        "Nous allons au marché tous les samedis.",
        "Il fait beau aujourd'hui, allons nous promener.",
        "Ma sœur apprend à jouer du piano.",
        "Le train part à huit heures précises.",
        "Je voudrais un café et un croissant, s'il vous plaît.",
        "Les enfants jouent dans la cour de l'école.",
        "La lune brille au-dessus de la mer.",
    ),
    "it": (
        "Il gatto dorme sul divano tutto il giorno.",
        "Domani andiamo al mare con la famiglia.",
        "Per favore, chiudi la porta quando esci.",
        "Mi piace molto la pizza con il pomodoro.",
        "Il treno parte alle nove di sera.",
        "I bambini giocano nel parco vicino a casa.",
        "Oggi il cielo è sereno e fa caldo.",
        "Ho comprato un libro nuovo in libreria.",
    ),
}
_TEST = {
    "en-us": (
        "Bright yellow flowers grow beside the quiet path.",
        "Could you show me the way to the museum?",
        "Five wise owls watched the moon rise over the hills.",
        "Put the book back on the top shelf, please.",
    ),
    "es": ("Mi hermano trabaja en una oficina del centro.", "¿Quieres venir a cenar con nosotros?"),
    "de": ("Meine Schwester wohnt in einer kleinen Stadt.", "Kannst du mir bitte das Salz geben?"),
    "fr": ("Mon frère travaille dans un grand bureau.", "Tu veux venir dîner avec nous ce soir?"),
    "it": ("Mia sorella vive in una piccola città.", "Vuoi venire a cena con noi stasera?"),
}
# The five calibration vowels in VRM order (A I U E O) as eSpeak phonemes, one call each.
CALIBRATION_PHONEMES = ("[[a:]]", "[[i:]]", "[[u:]]", "[[e:]]", "[[o:]]")
CALIBRATION_GAP_S = 0.3


@dataclass(frozen=True)
class Voice:
    language: str
    variant: str
    words_per_minute: int = 170
    pitch: int = 50

    @property
    def name(self) -> str:
        return f"{self.language}+{self.variant}"


def sentences(language: str, held_out: bool) -> tuple[str, ...]:
    return (_TEST if held_out else _TRAIN)[language]


def voices(held_out: bool, languages: tuple[str, ...] = LANGUAGES) -> list[Voice]:
    variants = TEST_VARIANTS if held_out else TRAIN_VARIANTS
    return [Voice(lang, v) for lang in languages for v in variants]


def speak(voice: Voice, text: str) -> Utterance:
    return synthesize(text, voice.name, words_per_minute=voice.words_per_minute, pitch=voice.pitch)


def utterances(voice: Voice, held_out: bool) -> Iterator[tuple[str, Utterance]]:
    for text in sentences(voice.language, held_out):
        yield text, speak(voice, text)


def calibration_clip(voice: Voice) -> tuple[npt.NDArray[np.int16], int]:
    """The voice saying A, I, U, E, O, each followed by a pause: what a user records once."""
    parts: list[npt.NDArray[np.int16]] = []
    rate = 0
    for phoneme in CALIBRATION_PHONEMES:
        u = synthesize(phoneme, voice.name, words_per_minute=voice.words_per_minute, pitch=voice.pitch)
        rate = u.rate
        parts += [u.audio, np.zeros(int(CALIBRATION_GAP_S * rate), np.int16)]
    assert len(CALIBRATION_PHONEMES) == len(VRM_VOWELS)
    return np.concatenate(parts), rate
