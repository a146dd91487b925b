"""Streaming AIST++/FACT music features: 35 values per output frame, computed causally in numpy.

FACT (research/models-and-anchors.md §3.2) analyses audio with librosa at SR = fps·512 (30720 Hz at
60 FPS) and hop 512, so one analysis frame is one output frame. Each row is

    [0]      onset envelope (mean positive dB-mel flux, as librosa.onset.onset_strength)
    [1:21]   MFCC 1..20 (librosa.feature.mfcc defaults: 128 Slaney mels, power→dB, DCT-II ortho)
    [21:33]  chroma, CENS-style (L1 → quantised → smoothed → L2)
    [33]     onset-peak one-hot
    [34]     beat one-hot

What differs from FACT's offline librosa pipeline, because a stream cannot see the future:
- the dB floor (top_db = 80) is relative to the loudest frame so far, not the whole song's.
- chroma comes from the STFT (not a CQT) and CENS smoothing uses only past frames (a one-sided
  Hann over 21 frames) instead of librosa's centred 41-frame window.
- onset peaks are picked online from past envelope values plus the ones the window already
  covers (see Timing), with the running maximum instead of the song's range for normalisation;
- beats come from an online tracker (autocorrelation tempo + comb phase over the last 6 s of the
  onset envelope) instead of offline dynamic programming seeded with the known BPM.

Timing: row j describes the 2048-sample window centred on the frame's time j/fps (zeros before the
stream start, like librosa's centred frames), so it is emitted once audio up to j/fps + 1024
samples has arrived: 33.3 ms at 60 FPS, and no other delay. librosa's centred onset envelope at
frame j is the flux between frames j-3 and j-2, whose windows end by j/fps; so the envelope for
frames j+1 and j+2 is already known when row j is emitted, which gives the peak picker its one
frame of look-ahead (librosa's post_max = 1) and the beat tracker one frame too, for free. Nothing
depends on how the audio is chunked: one big chunk or many small ones give identical rows.

Input at any sample rate is resampled to fps·512 with a Kaiser-windowed-sinc polyphase filter
(32 taps per output sample). Linear interpolation would be cheaper but folds everything above the
new Nyquist back into the mel bands MFCC and onsets are built from; the filter costs ~16k
multiply-adds per output frame, which is noise next to the FFT.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

__all__ = ["FEATURE_DIM", "HOP", "N_FFT", "Meter", "MeterTracker", "MusicFeatureStream"]

HOP = 512
N_FFT = 2048
N_MELS = 128
N_MFCC = 20
N_CHROMA = 12
FEATURE_DIM = 1 + N_MFCC + N_CHROMA + 1 + 1
TOP_DB = 80.0
AMIN = 1e-10

_ENVELOPE = 0
_MFCC = slice(1, 1 + N_MFCC)
_CHROMA = slice(_MFCC.stop, _MFCC.stop + N_CHROMA)
_PEAK = _CHROMA.stop
_BEAT = _PEAK + 1

_RESAMPLE_HALF_TAPS = 16
_RESAMPLE_MAX_PHASES = 1024
_RESAMPLE_BLOCK = 4096  # output samples per resampling pass
_CENS_FRAMES = 21
_BEAT_HISTORY_S = 6.0
_BEAT_MIN_BPM, _BEAT_MAX_BPM = 60.0, 200.0
# Log-normal tempo prior: librosa's centre (start_bpm 120) but half its width (1 octave), since dance
# music sits in 80-160 BPM and the wide prior lets alternating kick/snare pull the tempo an octave down.
_BEAT_PRIOR_BPM = 120.0
_BEAT_PRIOR_OCTAVES = 0.5
# Metrical-level check: alternating kick/snare makes the two-beat lag the strongest autocorrelation
# peak above ~150 BPM (half-tempo lock). When the half lag has a peak at least this fraction of the
# winner's, and the faster tempo is still a tempo, the faster level is the beat. Measured on the
# synthesizer's music: the ratio is 0.55-0.8 at 160-180 BPM and below 0.1 at 70-150 BPM.
_BEAT_HALF_LAG_RATIO = 0.4
_BEAT_DOUBLE_MAX_BPM = 200.0
# Downbeat / meter: accents (envelope at each beat) per position in a bar of 3 or 4, decayed per beat.
_METER_DECAY = 0.97
_BARS_PER_PHRASE = 4


def _hz_to_mel(f: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    # Slaney's mel scale (librosa's default, htk=False): linear below 1 kHz, logarithmic above.
    f_sp = 200.0 / 3.0
    logstep = math.log(6.4) / 27.0
    lin = f / f_sp
    return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-9) / 1000.0) / logstep, lin)


def _mel_to_hz(m: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    f_sp = 200.0 / 3.0
    logstep = math.log(6.4) / 27.0
    return np.where(m >= 15.0, 1000.0 * np.exp(logstep * (m - 15.0)), f_sp * m)


def mel_filterbank(sr: float, n_fft: int = N_FFT, n_mels: int = N_MELS) -> npt.NDArray[np.float64]:
    """(n_mels, n_fft//2+1) Slaney-normalised triangular mel filters from 0 Hz to sr/2 (librosa's)."""
    fft_hz = np.linspace(0.0, sr / 2.0, n_fft // 2 + 1)
    mel_hz = _mel_to_hz(np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(sr / 2.0)), n_mels + 2))
    fdiff = np.diff(mel_hz)
    ramps = mel_hz[:, None] - fft_hz[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    return weights * (2.0 / (mel_hz[2:] - mel_hz[:-2]))[:, None]


def dct_matrix(n_out: int = N_MFCC, n_in: int = N_MELS) -> npt.NDArray[np.float64]:
    """Orthonormal DCT-II rows (scipy.fft.dct(type=2, norm='ortho'), what librosa's MFCC uses)."""
    k = np.arange(n_out)[:, None]
    n = np.arange(n_in)[None, :]
    d = np.cos(np.pi * k * (2 * n + 1) / (2 * n_in)) * math.sqrt(2.0 / n_in)
    d[0] /= math.sqrt(2.0)
    return d


def chroma_filterbank(sr: float, n_fft: int = N_FFT) -> npt.NDArray[np.float64]:
    """(12, n_fft//2+1) pitch-class weights, C first: a Gaussian (σ = 0.5 semitone) on the circular
    distance to each class, times librosa's octave weighting (centre octave 5, width 2)."""
    hz = np.linspace(0.0, sr / 2.0, n_fft // 2 + 1)[1:]
    semis = 12.0 * np.log2(hz / 440.0) + 9.0  # semitones above C4 (A4 = 440 Hz is 9)
    dist = (semis[None, :] - np.arange(N_CHROMA)[:, None] + 6.0) % 12.0 - 6.0
    w = np.exp(-0.5 * (dist / 0.5) ** 2)
    octave = semis / 12.0 + 4.0  # C4 is octave 4
    w *= np.exp(-0.5 * ((octave - 5.0) / 2.0) ** 2)[None, :]
    w[:, hz < 50.0] = 0.0  # below ~50 Hz a 15 Hz FFT bin spans several semitones
    return np.concatenate([np.zeros((N_CHROMA, 1)), w], axis=1)


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


_Table = npt.NDArray[np.float64]


@lru_cache(maxsize=4)
def _analysis_tables(analysis_rate: int) -> tuple[_Table, _Table, _Table, _Table]:
    """The constant tables of one analysis rate: STFT window, mel and chroma filterbanks, DCT (cached,
    read-only: built once, not on the scheduler thread at every session's first audio)."""
    window = np.hanning(N_FFT + 1)[:-1]  # periodic Hann, as librosa's get_window
    tables = (window, mel_filterbank(analysis_rate), dct_matrix(), chroma_filterbank(analysis_rate))
    for table in tables:
        table.setflags(write=False)
    return tables


class _Resampler:
    """Streaming rational resampler; output sample n sits at input position n·down/up."""

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


@dataclass(frozen=True)
class Meter:
    """The tracker's metrical estimate after the latest row: tempo, beats per bar (3 or 4), where the
    latest beat sits in its bar (0 = downbeat), and bar / phrase (4 bars) counters since the start."""

    tempo_bpm: float
    beats_per_bar: int
    beat_in_bar: int
    bar: int
    phrase: int


class MeterTracker:
    """Downbeat and meter from beat accents: the onset strength at each beat, summed (decaying) per
    position modulo 3 and modulo 4. The meter is the one whose strongest position stands out most
    from its others; the downbeat is that position. Beats before the first estimate count as bar 0."""

    def __init__(self) -> None:
        self.acc = {3: np.zeros(3), 4: np.zeros(4)}
        self.beats = 0
        self.beats_per_bar = 4
        self.beat_in_bar = 0
        self.bar = 0

    def beat(self, accent: float) -> None:
        for n, acc in self.acc.items():
            acc *= _METER_DECAY
            acc[self.beats % n] += accent
        self.beats += 1

        def contrast(acc: npt.NDArray[np.float64]) -> float:
            rest = (acc.sum() - acc.max()) / (acc.size - 1)
            return float(acc.max() / rest) if rest > 1e-12 else 0.0

        meter = 3 if contrast(self.acc[3]) > contrast(self.acc[4]) else 4
        downbeat = int(np.argmax(self.acc[meter]))  # position (beat count mod meter) of the downbeats
        position = (self.beats - 1 - downbeat) % meter
        if position == 0 or position < self.beat_in_bar or meter != self.beats_per_bar:
            self.bar += 1 if self.beats > 1 else 0
        self.beats_per_bar, self.beat_in_bar = meter, position


class _BeatTracker:
    """Online beat tracker over the onset envelope.

    Tempo: autocorrelation of the last few seconds of the envelope, weighted by a log-normal prior
    around 120 BPM, peak refined by parabolic interpolation, then the metrical-level check (a strong
    peak at half the lag means the faster level is the beat). Phase: a comb at that period, summed
    over the past, picks how many frames ago the latest beat was; a beat is emitted when that is
    "now" and the previous beat is at least half a period back. Each beat's accent (the envelope
    around it) feeds the meter tracker: downbeat, bar and phrase.
    """

    def __init__(self, fps: float) -> None:
        self.fps = fps
        self.size = round(_BEAT_HISTORY_S * fps)
        self.env = np.zeros(self.size, np.float64)  # the last `size` envelope values, oldest first
        self.count = 0
        self.min_lag = max(2, int(fps * 60.0 / _BEAT_MAX_BPM))
        self.max_lag = math.ceil(fps * 60.0 / _BEAT_MIN_BPM)
        lags = np.arange(self.min_lag, self.max_lag + 1)
        bpm = 60.0 * fps / lags
        self.lags = lags
        self.prior = np.exp(-0.5 * (np.log2(bpm / _BEAT_PRIOR_BPM) / _BEAT_PRIOR_OCTAVES) ** 2)
        self.n_fft = 1 << (2 * self.size - 1).bit_length()
        self.last_beat = -(10**9)
        self.period = fps * 60.0 / _BEAT_PRIOR_BPM
        self.meter = MeterTracker()

    def step(self, value: float, frame: int) -> bool:
        """Add the envelope of ``frame + 1`` (one frame of look-ahead); is ``frame`` a beat?"""
        self.env[:-1] = self.env[1:]
        self.env[-1] = value
        self.count += 1
        if self.count < 2 * self.max_lag:
            return False
        e = self.env[-min(self.count, self.size) :]
        e = e - e.mean()
        spec = np.fft.rfft(e, self.n_fft)
        ac = np.fft.irfft(spec * np.conj(spec), self.n_fft)[: self.max_lag + 2]
        if ac[0] <= 0.0:
            return False
        score = ac[self.lags] * self.prior
        i = int(np.argmax(score))
        lag = float(self.lags[i])
        if 0 < i < score.size - 1:
            a, b, c = score[i - 1], score[i], score[i + 1]
            denom = a - 2.0 * b + c
            if denom < 0.0:
                lag += 0.5 * (a - c) / denom
        half = lag / 2.0
        if 60.0 * self.fps / half <= _BEAT_DOUBLE_MAX_BPM:
            lo = math.floor(half) - 1
            if float(ac[lo : lo + 4].max()) >= _BEAT_HALF_LAG_RATIO * float(ac[round(lag)]):
                lag = half
        self.period = lag
        # Comb: for each candidate offset d (frames before the decided frame, -1 = look-ahead), sum
        # the envelope at d, d+P, d+2P, ... with recent beats weighted more.
        n = e.size
        m = np.arange(int((n - 2) // lag))
        d = np.arange(-1, math.ceil(lag) - 1)
        pos = (n - 2) - d[:, None] - np.round(m[None, :] * lag).astype(np.int64)
        valid = pos >= 0
        weights = np.where(valid, 0.9 ** m[None, :], 0.0)
        comb = (e[np.maximum(pos, 0)] * weights).sum(axis=1)
        best = int(d[int(np.argmax(comb))])
        if best != 0 or frame - self.last_beat < 0.5 * lag:
            return False
        self.last_beat = frame
        # Accent: the strongest envelope within a frame of the beat (e[-2] is this frame).
        self.meter.beat(float(e[-4:].max()))
        return True


class MusicFeatureStream:
    """Per-session streaming music features. ``push(pcm)`` → ``(k, 35)`` float32 rows (k may be 0)."""

    def __init__(self, sample_rate: int, fps: float = 60.0) -> None:
        if sample_rate <= 0 or fps <= 0:
            raise ValueError("sample_rate and fps must be positive")
        self.sample_rate = int(sample_rate)
        self.fps = float(fps)
        self.analysis_rate = round(fps * HOP)
        self.latency_samples = N_FFT // 2  # at analysis_rate, after the row's own time
        self.latency_ms = 1000.0 * self.latency_samples / self.analysis_rate
        self._resampler = _Resampler(self.sample_rate, self.analysis_rate)
        self._window, self._mel, self._dct, self._chroma = _analysis_tables(self.analysis_rate)
        hann = np.hanning(2 * _CENS_FRAMES + 1)[_CENS_FRAMES + 1 :][::-1]  # one-sided, newest heaviest
        self._cens_window = hann / hann.sum()
        self._cens_hist = np.zeros((_CENS_FRAMES, N_CHROMA), np.float64)
        # Analysis buffer: _buf[i] is resampled sample _buf_start + i; starts with half a window of
        # zeros so frame 0 is centred on sample 0, like librosa's centred frames.
        self._buf = np.zeros(N_FFT // 2, np.float64)
        self._buf_start = -(N_FFT // 2)
        self._next_frame = 0
        self._prev_mel_db: npt.NDArray[np.float64] | None = None
        self._db_max = -np.inf
        # Peak picking as librosa.onset.onset_detect (pre_max 30 ms, post_max 1 frame, pre_avg
        # 100 ms, wait 30 ms, delta 0.07 of the normalised envelope).
        self._pre_avg = max(1, int(0.10 * self.fps))
        self._wait = max(1, int(0.03 * self.fps))
        # Envelope of frames ..., j-1, j, j+1, j+2 while row j is being finished (newest last).
        self._env = np.zeros(self._pre_avg + 4, np.float64)
        self._env_max = 1e-6
        self._last_peak = -(10**9)
        self._beats = _BeatTracker(self.fps)

    @property
    def meter(self) -> Meter:
        m = self._beats.meter
        tempo = 60.0 * self.fps / self._beats.period
        return Meter(tempo, m.beats_per_bar, m.beat_in_bar, m.bar, m.bar // _BARS_PER_PHRASE)

    def push(self, pcm: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """Feed mono PCM (int16, or float in [-1, 1]); returns the rows this chunk completed."""
        x = np.asarray(pcm)
        if x.ndim != 1:
            raise ValueError(f"expected mono PCM (1-D), got shape {x.shape}")
        samples = x.astype(np.float64) / 32768.0 if x.dtype == np.int16 else x.astype(np.float64)
        self._buf = np.concatenate([self._buf, self._resampler.push(samples)])
        rows = []
        # Frames are analysed one at a time (not batched) so that the arithmetic, and so the rows,
        # cannot depend on how the audio was chunked.
        while True:
            start = self._next_frame * HOP - N_FFT // 2 - self._buf_start
            if start + N_FFT > self._buf.size:
                break
            rows.append(self._frame(self._buf[start : start + N_FFT]))
            self._next_frame += 1
        drop = self._next_frame * HOP - N_FFT // 2 - self._buf_start
        if drop > 0:
            self._buf = self._buf[drop:]
            self._buf_start += drop
        if not rows:
            return np.zeros((0, FEATURE_DIM), np.float32)
        return np.stack(rows)

    def _frame(self, window: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
        """The row of the frame whose window this is."""
        j = self._next_frame
        power = np.abs(np.fft.rfft(window * self._window)) ** 2
        mel_db = 10.0 * np.log10(np.maximum(self._mel @ power, AMIN))
        # librosa floors at the whole song's maximum - 80 dB; the loudest frame so far is the causal stand-in.
        self._db_max = max(self._db_max, float(mel_db.max()))
        np.maximum(mel_db, self._db_max - TOP_DB, out=mel_db)
        # This window gives the envelope of frame j+2: mean positive dB flux from frame j-1 to j.
        flux = 0.0 if self._prev_mel_db is None else float(np.maximum(0.0, mel_db - self._prev_mel_db).mean())
        self._prev_mel_db = mel_db
        self._env[:-1] = self._env[1:]
        self._env[-1] = flux

        row = np.empty(FEATURE_DIM, np.float32)
        row[_ENVELOPE] = self._env[-3]
        row[_MFCC] = self._dct @ mel_db
        row[_CHROMA] = self._cens(self._chroma @ power)
        row[_PEAK] = 1.0 if self._is_peak(j) else 0.0
        row[_BEAT] = 1.0 if self._beats.step(float(self._env[-2]), j) else 0.0
        return row

    def _cens(self, chroma: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        total = chroma.sum()
        c = chroma / total if total > 1e-12 else np.zeros(N_CHROMA)
        # CENS quantisation (librosa.feature.chroma_cens: thresholds 0.4, 0.2, 0.1, 0.05 → 1..4),
        # then a causal smoothing and L2 normalisation.
        self._cens_hist[:-1] = self._cens_hist[1:]
        self._cens_hist[-1] = (c > 0.4).astype(np.float64) + (c > 0.2) + (c > 0.1) + (c > 0.05)
        smooth: npt.NDArray[np.float64] = self._cens_window @ self._cens_hist
        norm = float(np.linalg.norm(smooth))
        return smooth / norm if norm > 1e-12 else smooth

    def _is_peak(self, j: int) -> bool:
        # Normalised by a slowly decaying running maximum (the offline version uses the song's range).
        self._env_max = max(self._env_max * 0.999, float(self._env[-3]))
        h = self._env / self._env_max
        centre = h[-3]
        if (
            centre >= h[-4]
            and centre >= h[-2]
            and centre >= h[-3 - self._pre_avg : -2].mean() + 0.07
            and j - self._last_peak > self._wait
        ):
            self._last_peak = j
            return True
        return False
