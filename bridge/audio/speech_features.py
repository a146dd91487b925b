"""Streaming speech features: MFCCs over a short causal window, stacked over the last 67 ms.

Audio at any rate is resampled to ANALYSIS_RATE (15360 Hz, enough for the formants and fricative
noise that tell visemes apart). Every SUB_HOP samples (120 Hz) a 512-sample (33 ms) Hann window that
ENDS at that instant gives 13 MFCCs (40 Slaney mel bands, dB, orthonormal DCT: the music features'
own filterbank and DCT, bridge.audio.music_features) and its level in dB. Output frame j (time
j/fps) stacks the CONTEXT sub-frames that end at j/fps, oldest first, so it is complete as soon as
the audio up to its own time has arrived: no look-ahead, algorithmic latency 0 (the window's centre
trails the frame time by 16.7 ms, half a 30 fps frame).

A per-session cepstral offset (from the calibration vowels, docs/speech.md) is added to every
sub-frame's MFCCs: it moves a new voice's vowels onto the training voices' before classification.

As the music features (bridge.audio.music_features), every stream's analysis state is a row of a
`SpeechFeatureBatch` at its slot (bridge.state), and a run computes the frames of every stream fed since
the last one together: a pipeline's sessions' sub-frames go through one FFT and one filterbank product.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from bridge.audio.music_features import dct_matrix, mel_filterbank
from bridge.audio.queued import QueuedRuns
from bridge.state.slots import SlotPool, grown

__all__ = ["ANALYSIS_RATE", "CONTEXT", "FEATURE_DIM", "N_MFCC", "SpeechFeatureBatch", "SpeechFeatureStream"]

ANALYSIS_RATE = 15360
SUB_HOP = 128
WINDOW = 512
N_MELS = 40
N_MFCC = 13
CONTEXT = 8  # sub-frames per output frame: 8 x 8.3 ms
FEATURE_DIM = CONTEXT * N_MFCC
AMIN = 1e-10
_Table = npt.NDArray[np.float64]
_F32 = npt.NDArray[np.float32]
_RESAMPLE_HALF_TAPS = 16
_RESAMPLE_MAX_PHASES = 1024
_RESAMPLE_BLOCK = 4096  # output samples per resampling pass


@lru_cache(maxsize=1)
def _tables() -> tuple[_Table, _Table, _Table]:
    window = np.hanning(WINDOW + 1)[:-1]
    mel = mel_filterbank(ANALYSIS_RATE, WINDOW, N_MELS)
    dct = dct_matrix(N_MFCC, N_MELS)
    for table in (window, mel, dct):
        table.setflags(write=False)
    return window, mel, dct


@lru_cache(maxsize=16)
def _kaiser_sinc_bank(up: int, down: int, phases: int) -> npt.NDArray[np.float64]:
    """Polyphase windowed-sinc bank, (phases, 2·half) taps, for resampling by up/down (cached, read-only:
    every stream of one input rate shares it)."""
    half = _RESAMPLE_HALF_TAPS
    cutoff = 0.95 * min(1.0, up / down)  # fraction of the input Nyquist kept
    frac = np.arange(phases)[:, None] / phases
    x = np.arange(-half + 1, half + 1)[None, :] - frac  # input offset relative to the output point
    beta = 8.6
    window = np.i0(beta * np.sqrt(np.clip(1.0 - (x / half) ** 2, 0.0, 1.0))) / np.i0(beta)
    taps: npt.NDArray[np.float64] = cutoff * np.sinc(cutoff * x) * window
    bank: npt.NDArray[np.float64] = taps / taps.sum(axis=1, keepdims=True)
    bank.setflags(write=False)
    return bank


class _Resampler:
    """Streaming rational resampler (Kaiser-windowed sinc, 32 taps per output sample) of the
    speech features; output sample n sits at input position n·down/up."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        g = math.gcd(in_rate, out_rate)
        self.up, self.down = out_rate // g, in_rate // g
        self.identity = self.up == self.down
        self.phases = min(self.up, _RESAMPLE_MAX_PHASES)
        self.bank = _kaiser_sinc_bank(self.up, self.down, self.phases)
        self.half = _RESAMPLE_HALF_TAPS
        # Input history: buffer[i] is input sample buf_start + i; negative indices read as zeros.
        self.buffer = np.zeros(2 * self.half, np.float64)
        self.buf_start = -2 * self.half
        self.n_out = 0

    def push(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if self.identity:
            return x
        self.buffer = np.concatenate([self.buffer, x])
        end = self.buf_start + self.buffer.size  # inputs [.., end) are known
        # Output n needs inputs up to floor(n·down/up) + half.
        n_max = ((end - self.half) * self.up - 1) // self.down  # last n with base + half < end
        n = np.arange(self.n_out, max(self.n_out, n_max + 1), dtype=np.int64)
        out = np.empty(n.size, np.float64)
        taps = np.arange(-self.half + 1, self.half + 1)[None, :]
        # In blocks: the (outputs x taps) temporaries stay a few MB whatever the chunk's length.
        for i in range(0, n.size, _RESAMPLE_BLOCK):
            pos = n[i : i + _RESAMPLE_BLOCK] * self.down
            phase = (pos % self.up) * self.phases // self.up
            idx = (pos // self.up)[:, None] - self.buf_start + taps
            out[i : i + _RESAMPLE_BLOCK] = (self.buffer[idx] * self.bank[phase]).sum(axis=1)
        if n.size:
            self.n_out = int(n[-1]) + 1
        # Keep what the next outputs can still reach.
        next_base = self.n_out * self.down // self.up
        drop = max(0, next_base - self.half - self.buf_start)
        self.buffer = self.buffer[drop:]
        self.buf_start += drop
        return out


def sub_hops_per_frame(fps: float) -> int:
    hop = ANALYSIS_RATE / fps
    if hop != int(hop) or int(hop) % SUB_HOP:
        raise ValueError(f"speech features need {ANALYSIS_RATE}/fps to be a multiple of {SUB_HOP}, fps={fps}")
    return int(hop) // SUB_HOP


class SpeechFeatureBatch(QueuedRuns["tuple[SpeechFeatureStream, _F32, _F32]"]):
    """The feature state of many streams at one fps, a row per stream at its slot (bridge.state): the
    MFCCs (before the offset) and levels of its last CONTEXT sub-frames.

    Streams join with `open(sample_rate)` and `feed` their audio (from any thread); `run()` computes
    every frame fed since the last run, the sub-frames of all streams in one FFT. Feeding and running
    hold one lock, so a run never sees a half-fed chunk.
    """

    def __init__(self, fps: float) -> None:
        self.fps = float(fps)
        self.per_frame = sub_hops_per_frame(fps)
        self._window, self._mel, self._dct = _tables()
        self._silence = self._dct @ np.full(N_MELS, 10.0 * np.log10(AMIN))  # a fresh row's sub-frames
        super().__init__()
        self._pool = SlotPool()
        self._mfcc = np.zeros((0, CONTEXT, N_MFCC))
        self._level = np.zeros((0, CONTEXT))

    def open(self, sample_rate: int) -> SpeechFeatureStream:
        """A new stream of this batch, for audio at `sample_rate`."""
        return SpeechFeatureStream(sample_rate, self.fps, batch=self)

    def _run(self, pending: list[tuple[SpeechFeatureStream, _F32, _F32]]) -> None:
        fresh = self._pool.take_fresh()  # before the size: every fresh row is below it
        self._mfcc = grown(self._mfcc, self._pool.size)
        self._level = grown(self._level, self._pool.size)
        self._mfcc[fresh], self._level[fresh] = self._silence, -100.0
        # Each stream's frames to fill, in the order they were fed.
        dests: dict[int, tuple[SpeechFeatureStream, list[_F32], list[_F32]]] = {}
        for stream, features, levels in pending:
            _, fs, ls = dests.setdefault(id(stream), (stream, [], []))
            fs.append(features)
            ls.append(levels)
        queue = list(dests.values())
        subs = [np.arange(s._next_sub, s._fed_sub) for s, _, _ in queue]
        frames = np.concatenate(
            [
                s._buf[(n * SUB_HOP - WINDOW - s._buf_start)[:, None] + np.arange(WINDOW)[None, :]]
                for (s, _, _), n in zip(queue, subs, strict=True)
            ]
        )
        power = np.abs(np.fft.rfft(frames * self._window, axis=1)) ** 2
        mfcc = 10.0 * np.log10(np.maximum(power @ self._mel.T, AMIN)) @ self._dct.T
        level = 10.0 * np.log10(np.maximum((frames**2).mean(axis=1), AMIN))
        first = 0
        for (s, fs, ls), n in zip(queue, subs, strict=True):
            row, last = s._row.index, first + n.size
            history = np.concatenate([self._mfcc[row], mfcc[first:last]])  # new sub-frame i: row CONTEXT + i
            levels = np.concatenate([self._level[row], level[first:last]])
            ends = np.flatnonzero(n % self.per_frame == 0) + CONTEXT + 1  # one past each frame's last row
            features = history[ends[:, None] - CONTEXT + np.arange(CONTEXT)[None, :]] + s.offset
            frame_levels = levels[ends[:, None] - 1 - np.arange(self.per_frame)[None, :]].max(axis=1)
            self._mfcc[row], self._level[row] = history[-CONTEXT:], levels[-CONTEXT:]
            k = 0
            for f, lv in zip(fs, ls, strict=True):
                f[...] = features[k : k + len(f)].reshape(len(f), FEATURE_DIM)
                lv[...] = frame_levels[k : k + len(f)]
                k += len(f)
            s._skip_to_fed()
            first = last

    def _queue(self, stream: SpeechFeatureStream, features: _F32, levels: _F32) -> None:
        self._pending.append((stream, features, levels))


class SpeechFeatureStream:
    """One session's streaming features, a row of a `SpeechFeatureBatch` (its own batch of one unless
    given one): the resampler and the analysis samples still to use. `feed(pcm)` -> the frames
    (features (k, FEATURE_DIM), level_db (k,)) the batch's next `run()` fills; `push(pcm)` feeds and
    runs."""

    def __init__(self, sample_rate: int, fps: float, *, batch: SpeechFeatureBatch | None = None) -> None:
        if batch is None:
            batch = SpeechFeatureBatch(fps)
        elif batch.fps != float(fps):
            raise ValueError("a stream of a batch has the batch's fps")
        self.batch = batch
        self.sample_rate = int(sample_rate)
        self.fps = batch.fps
        self.offset = np.zeros(N_MFCC, np.float64)  # calibration's cepstral shift, read at each run
        self._resampler = _Resampler(self.sample_rate, ANALYSIS_RATE)
        self._row = batch._pool.acquire()  # this stream's row of the batch's arrays, freed with the stream
        # _buf[i] is analysis sample _buf_start + i; zeros before the stream starts.
        self._buf = np.zeros(WINDOW, np.float64)
        self._buf_start = -WINDOW
        self._next_sub = 0  # the next sub-frame to compute; sub-frame i's window ends at sample i * SUB_HOP
        self._fed_sub = 0  # sub-frames before this one are complete in the buffer

    def feed(self, pcm: npt.ArrayLike) -> tuple[_F32, _F32]:
        """Take mono PCM (int16, or float in [-1, 1]); returns the frames this chunk completes, filled by
        the batch's next `run()`."""
        x = np.asarray(pcm)
        samples = x.astype(np.float64) / 32768.0 if x.dtype == np.int16 else x.astype(np.float64)
        samples = self._resampler.push(samples)
        with self.batch._lock:
            self._buf = np.concatenate([self._buf, samples])
            last = (self._buf_start + self._buf.size) // SUB_HOP  # sub-frames whose window end has arrived
            subs = np.arange(self._fed_sub, last + 1)
            k = int(np.count_nonzero(subs % self.batch.per_frame == 0))
            features, levels = np.empty((k, FEATURE_DIM), np.float32), np.empty(k, np.float32)
            if subs.size:
                self._fed_sub = last + 1
                self.batch._queue(self, features, levels)
        return features, levels

    def push(self, pcm: npt.ArrayLike) -> tuple[_F32, _F32]:
        """Feed mono PCM and run the batch: the frames this chunk completed."""
        frames = self.feed(pcm)
        self.batch.run()
        return frames

    def _skip_to_fed(self) -> None:
        """Every fed sub-frame is done: drop the samples no later window needs."""
        self._next_sub = self._fed_sub
        drop = self._next_sub * SUB_HOP - WINDOW - self._buf_start
        if drop > 0:
            self._buf = self._buf[drop:]
            self._buf_start += drop


def utterance_features(
    pcm: npt.ArrayLike, rate: int, fps: float, offset: npt.ArrayLike | None = None
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Features of a whole recording, frames 0 .. (the last complete one), as the stream gives them."""
    stream = SpeechFeatureStream(rate, fps)
    if offset is not None:
        stream.offset = np.asarray(offset, np.float64)
    return stream.push(pcm)
