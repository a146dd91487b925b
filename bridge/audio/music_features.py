"""Streaming AIST++/FACT music features: 35 values per output frame, computed causally in numpy,
for many streams at once.

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
- beats come from an online tracker (autocorrelation tempo over the last 6 s of "loud" onset
  envelopes, which leave out quiet hi-hats, + comb phase over the onset envelope; see _BeatRows)
  instead of offline dynamic programming seeded with the known BPM. The tempo is
  re-estimated every `tempo_every` frames (default TEMPO_EVERY = 15, 250 ms at 60 FPS), the beat
  phase every frame: a beat is still emitted on the frame it falls on; only a tempo change reaches
  the beat grid up to tempo_every - 1 frames later (on top of the 6 s window it is estimated over).

Timing: row j describes the 2048-sample window centred on the frame's time j/fps (zeros before the
stream start, like librosa's centred frames), so it is emitted once audio up to j/fps + 1024
samples has arrived: 33.3 ms at 60 FPS, plus the resampler's delay (below). librosa's centred onset
envelope at frame j is the flux between frames j-3 and j-2, whose windows end by j/fps; so the
envelope for frames j+1 and j+2 is already known when row j is emitted, which gives the peak picker
its one frame of look-ahead (librosa's post_max = 1) and the beat tracker one frame too, for free.
Nothing depends on how the audio is chunked: one big chunk or many small ones give identical rows.

Input at another rate than fps·512 is resampled by soxr, one stream per session (a multi-channel
soxr stream would need every session's audio in lockstep), in its variable-rate mode at a fixed
ratio: a polyphase filter, flat to 15 kHz with aliases below -120 dB, that gives every 1/60 s chunk
of 48 kHz audio its one row. soxr's fixed-rate HQ (librosa's "soxr_hq", FACT's own resampling)
computes in blocks of ~1.6 frames at 48 kHz, so a live stream would get 0, 1 or 2 rows per chunk and
8 ms more delay on average. The resampler delays a row by up to one chunk more: 16.7 ms at 48 and
44.1 kHz in 1/60 s chunks (as the hand-written 32-tap filter it replaces did), 28 ms at 16 kHz
(docs/scheduling.md, "Music features"). Audio at fps·512 is not resampled.

Many streams: `MusicFeatureBatch` holds the state of its streams as arrays with a row per stream.
`MusicFeatureStream.feed(pcm)` resamples and buffers a chunk and returns the rows it completes,
unfilled; `MusicFeatureBatch.run()` fills every row fed since the last run, all streams at once: in
waves, wave k computing the k-th new frame of every stream that has one (STFT, mel, MFCC, chroma,
onset, peak and beat for the whole wave in one numpy pass each), so each stream's frames still run
one by one, in order. A stream alone is a batch of one (`push` = feed + run). A stream's rows are
bit for bit the same whatever streams share its waves: no product goes through BLAS, whose rounding
changes with the batch size (and which spreads over threads that a 2-core host does not have to
spare); the mel bands are a sparse sum, chroma and DCT einsum's own loops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import soxr

from bridge.audio.queued import QueuedRuns
from bridge.state.slots import SlotLease, SlotPool

__all__ = [
    "BEAT_COLUMN",
    "FEATURE_DIM",
    "HOP",
    "N_FFT",
    "TEMPO_EVERY",
    "Meter",
    "MeterTracker",
    "MusicFeatureBatch",
    "MusicFeatureStream",
]

HOP = 512
N_FFT = 2048
N_MELS = 128
N_MFCC = 20
N_CHROMA = 12
FEATURE_DIM = 1 + N_MFCC + N_CHROMA + 1 + 1
TOP_DB = 80.0
AMIN = 1e-10
TEMPO_EVERY = 15  # frames between tempo estimates

_ENVELOPE = 0
_MFCC = slice(1, 1 + N_MFCC)
_CHROMA = slice(_MFCC.stop, _MFCC.stop + N_CHROMA)
_PEAK = _CHROMA.stop
BEAT_COLUMN = _PEAK + 1  # the beat one-hot

_CENS_FRAMES = 21
_CENS_STEPS = np.array([0.05, 0.1, 0.2, 0.4])  # CENS quantisation: a value above k of these counts k
_BEAT_HISTORY_S = 6.0
_BEAT_MIN_BPM, _BEAT_MAX_BPM = 60.0, 200.0
# Tempo prior, explicit about the range dance music is made in: flat from 70 to 180 BPM, a log-normal
# fall-off (a quarter octave) outside it. Which metrical level inside it is the beat is left to the
# fastest-level rule below, not to a preference for 120 BPM.
_BEAT_PRIOR_BPM = 120.0  # the tempo before the first estimate
_BEAT_RANGE_BPM = (70.0, 180.0)
_BEAT_PRIOR_FALLOFF_OCTAVES = 0.25
# The tempo comes from a second, "loud" onset envelope: the same dB-mel flux with its floor 30 dB (not
# 80) below the loudest value so far, so quiet events (hi-hats on the eighths, swung or straight)
# hardly move it while kicks, snares and bass notes do. The beat is the fastest metrical level whose
# autocorrelation peak reaches this fraction of the best one (kick/snare alternation makes the
# two-beat lag the best above ~150 BPM; the one-beat lag still reaches well over half of it).
_BEAT_LOUD_DB = (30.0, 45.0)
_BEAT_LEVEL_RATIO = 0.5
_BEAT_LEVEL_TOLERANCE = 0.06  # how far from a whole fraction of the best lag a faster level may be
_BEAT_MULTIPLES = 4  # the period is refined from the autocorrelation peaks at 1..4 periods
# Breaks (drums thinned to the downbeats) show only the bar, of 3 or 4 beats (see _tempo).
_BEAT_BAR_BEATS = (3, 4)
# Meter accents come from the loud flux of the mel bands below ~250 Hz (kick and bass): the
# downbeat carries the bar's kick and bass note, while snares (broadband noise) dominate the full
# envelope and would pass for downbeats.
_ACCENT_BANDS = slice(0, 9)
# Downbeat / meter: accents (envelope at each beat) per position in a bar of 3 or 4, decayed per beat.
_METER_DECAY = 0.97
# Beat phase: the comb weighs each period back by this much less than the one after it.
_PHASE_DECAY = 0.9
# Once beats come, the next one is expected a period after the last: a candidate phase that far from
# it (a Gaussian of _PHASE_SIGMA periods) keeps only _PHASE_HOLD of its comb score, so off-beat
# accents (syncopated sixteenths) must outweigh the beat clearly, not for a bar, to move it.
_PHASE_HOLD = 0.5
_PHASE_SIGMA = 0.1
_BARS_PER_PHRASE = 4
_NEVER = -(10**9)  # "frame" of a peak or beat that has not happened

_F64 = npt.NDArray[np.float64]
_I64 = npt.NDArray[np.int64]
_Bool = npt.NDArray[np.bool_]
_Index = slice | _I64  # rows of the state arrays: a slice when they are consecutive (views, no copies)


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


@dataclass(frozen=True)
class _Tables:
    """The constant tables of one analysis rate (read-only; shared by every batch of that rate)."""

    window: _F64  # periodic Hann, as librosa's get_window
    # The mel filterbank as sparse sums, in groups of consecutive bands of similar width: a group's
    # (bands, K) bins (padded at weight 0) and weights; and all bands padded to the widest, (K, bands).
    mel_groups: tuple[tuple[_I64, _F64], ...]
    mel_single: tuple[_I64, _F64]
    dct: _F64  # (N_MFCC, N_MELS)
    chroma: _F64  # (N_CHROMA, bins)
    cens_window: _F64  # one-sided Hann over the last _CENS_FRAMES frames, oldest first, sum 1


@lru_cache(maxsize=4)
def _analysis_tables(analysis_rate: int) -> _Tables:
    """Built once per rate, not on the scheduler thread at every session's first audio."""
    mel = mel_filterbank(analysis_rate)
    # A triangle covers a few bins (3 to 58 of 1025): sparse sums do ~2 multiply-adds per bin, not 128.
    spans = [np.flatnonzero(row) for row in mel]
    if any(span.size == 0 for span in spans):
        raise ValueError(f"a mel filter at {analysis_rate} Hz covers no FFT bin")

    def padded(bands: range) -> tuple[_I64, _F64]:
        width = max(spans[b].size for b in bands)
        bins = np.array([np.pad(spans[b], (0, width - spans[b].size), mode="edge") for b in bands])
        return bins, np.array([np.pad(mel[b, spans[b]], (0, width - spans[b].size)) for b in bands])

    groups, first = [], 0
    for band in range(1, N_MELS + 1):  # a group's widest band is at most twice its narrowest
        if band == N_MELS or spans[band].size > 2 * spans[first].size:
            groups.append(padded(range(first, band)))
            first = band
    all_bins, all_weights = padded(range(N_MELS))
    hann = np.hanning(2 * _CENS_FRAMES + 1)[_CENS_FRAMES + 1 :][::-1]  # in time order: newest heaviest
    tables = _Tables(
        window=np.hanning(N_FFT + 1)[:-1],
        mel_groups=tuple(groups),
        mel_single=(np.ascontiguousarray(all_bins.T), np.ascontiguousarray(all_weights.T)),
        dct=dct_matrix(),
        chroma=chroma_filterbank(analysis_rate),
        cens_window=hann / hann.sum(),
    )
    for table in (
        tables.window,
        tables.dct,
        tables.chroma,
        tables.cens_window,
        *tables.mel_single,
        *(a for g in tables.mel_groups for a in g),
    ):
        table.setflags(write=False)
    return tables


def _mel_bands(tables: _Tables, power: _F64) -> _F64:
    """(frames, N_MELS) mel band powers of (frames, bins) power spectra."""
    # Both ways add a band's products in bin order, one at a time (the padding adds exact zeros), so a
    # frame's bands are bit for bit the same alone or in a batch: einsum does so for many frames but
    # takes a loop that rounds otherwise for a single frame; a sum over the outer of two axes adds in
    # order too, slower for many frames.
    if power.shape[0] == 1:
        bins, w = tables.mel_single
        single: _F64 = np.add.reduce(power[0, bins] * w, axis=0)[None, :]
        return single
    bands = [np.einsum("fbk,bk->fb", power[:, bins], w) for bins, w in tables.mel_groups]
    return np.concatenate(bands, axis=1)


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


def _grown(a: npt.NDArray[np.generic], rows: int) -> npt.NDArray[np.generic]:
    """`a` with `rows` rows (first axis), its rows kept; the new ones are reset before use."""
    out = np.zeros((rows, *a.shape[1:]), a.dtype)
    out[: a.shape[0]] = a
    return out


class _BeatRows:
    """The online beat tracker of every stream of a batch, a row each, stepped for many rows at once.

    Tempo (every `tempo_every` frames): autocorrelation of the last few seconds of the loud envelope
    (the full one while the loud one is flat), weighted by a prior flat over 70-180 BPM; the beat is
    the fastest lag that divides the best one into whole parts and whose peak reaches half of it
    (metrical level), its period refined from the
    peaks at 1..4 periods; a slower estimate no stronger than a bar of the current period (a break
    that keeps only the downbeats) keeps the current period. Phase (every frame): a comb at that
    period over the full envelope, summed over the past, picks how many frames ago the latest beat
    was, phases far from a period after the last beat held back to half their score; a beat is
    emitted when that is "now" and the previous beat is at least half a period back.
    Each beat's accent (the low-band loud flux around it) goes to its stream's meter tracker.
    """

    def __init__(self, fps: float, tempo_every: int) -> None:
        self.fps = fps
        self.tempo_every = tempo_every
        self.size = round(_BEAT_HISTORY_S * fps)
        self.min_lag = max(2, int(fps * 60.0 / _BEAT_MAX_BPM))
        self.max_lag = math.ceil(fps * 60.0 / _BEAT_MIN_BPM)
        self.lags = np.arange(self.min_lag, self.max_lag + 1)
        bpm = 60.0 * fps / self.lags
        lo, hi = _BEAT_RANGE_BPM
        outside = np.maximum(np.log2(bpm / hi), 0.0) + np.maximum(np.log2(lo / bpm), 0.0)
        self.prior = np.exp(-0.5 * (outside / _BEAT_PRIOR_FALLOFF_OCTAVES) ** 2)
        self.n_fft = 1 << (2 * self.size - 1).bit_length()
        # Per row: the last `size` values of the full and the loud envelope (oldest first; zeros before
        # the stream's first), the low-band flux of the last 3 frames, values seen, when the next tempo
        # estimate is due (in values seen), the latest beat's frame, the beat period in frames and
        # whether it has been estimated yet.
        self.env = np.zeros((0, self.size))
        self.loud = np.zeros((0, len(_BEAT_LOUD_DB), self.size))
        self.low = np.zeros((0, 3))
        self.count = np.zeros(0, np.int64)
        self.tempo_due = np.zeros(0, np.int64)
        self.last_beat = np.zeros(0, np.int64)
        self.period = np.zeros(0)
        self.has_tempo = np.zeros(0, np.bool_)

    def grow(self, rows: int) -> None:
        for name in ("env", "loud", "low", "count", "tempo_due", "last_beat", "period", "has_tempo"):
            setattr(self, name, _grown(getattr(self, name), rows))

    def reset(self, rows: _I64) -> None:
        self.env[rows] = 0.0
        self.loud[rows] = 0.0
        self.low[rows] = 0.0
        self.count[rows] = 0
        self.tempo_due[rows] = 2 * self.max_lag  # the first estimate once two longest periods are in
        self.last_beat[rows] = _NEVER
        self.period[rows] = self.fps * 60.0 / _BEAT_PRIOR_BPM
        self.has_tempo[rows] = False

    def step(
        self, rows: _I64, ix: _Index, value: _F64, loud: _F64, low: _F64, frame: _I64
    ) -> tuple[_Bool, _F64]:
        """Add the full envelope, loud envelope and low-band loud flux of each row's ``frame + 1`` (one
        frame of look-ahead); which rows have a beat at ``frame``, and its accent. `ix` selects `rows`
        (a slice when they are consecutive)."""
        env = self.env[ix]
        env[:, :-1] = env[:, 1:]
        env[:, -1] = value
        loud_env = self.loud[ix]
        loud_env[:, :, :-1] = loud_env[:, :, 1:]
        loud_env[:, :, -1] = loud
        low_env = self.low[ix]
        low_env[:, :-1] = low_env[:, 1:]
        low_env[:, -1] = low
        count = self.count[ix] + 1
        self.env[ix], self.loud[ix], self.low[ix], self.count[ix] = env, loud_env, low_env, count
        beat = np.zeros(rows.size, np.bool_)
        accent = np.zeros(rows.size)
        due = np.flatnonzero((count >= 2 * self.max_lag) & (count >= self.tempo_due[ix]))
        if due.size:
            self._tempo(rows[due], env[due], loud_env[due], count[due])
        # A beat needs a tempo, the previous beat half a period back, and a window that is not flat
        # (silence); only those rows run the comb.
        can = np.flatnonzero(
            (count >= 2 * self.max_lag)
            & self.has_tempo[ix]
            & (frame - self.last_beat[ix] >= 0.5 * self.period[ix])
        )
        if not can.size:
            return beat, accent
        e = self._centred(env[can], count[can])
        live = np.flatnonzero((e != 0.0).any(axis=1))
        if not live.size:  # every candidate's window is flat: no comb (an empty one has no period)
            return beat, accent
        can, e = can[live], e[live]
        period = self.period[rows[can]]
        last = self.last_beat[rows[can]]
        expected = np.where(last == _NEVER, np.nan, frame[can] - last - period)  # since the expected beat
        is_beat = self._phase(e, np.minimum(count[can], self.size), period, expected) == 0
        hit = can[is_beat]
        self.last_beat[rows[hit]] = frame[hit]
        beat[hit] = True
        # Accent: the strongest low-band flux within a frame of the beat (low_env[:, -2] is this frame).
        accent[hit] = low_env[hit].max(axis=1)
        return beat, accent

    def _centred(self, env: _F64, count: _I64) -> _F64:
        """The windows minus their means, over the values each has (older entries stay zeros)."""
        n = np.minimum(count, self.size)
        centred: _F64 = env - (np.add.reduce(env, axis=1) / n)[:, None]
        if n.min() < self.size:  # the first seconds: only the newest n entries are values
            centred[np.arange(self.size)[None, :] < (self.size - n)[:, None]] = 0.0
        return centred

    def _autocorrelation(self, e: _F64, lags: int) -> _F64:
        spec = np.fft.rfft(e, self.n_fft, axis=1)
        ac: _F64 = np.fft.irfft(spec * np.conj(spec), self.n_fft, axis=1)[:, :lags]
        return ac

    def _tempo(self, rows: _I64, env: _F64, loud: _F64, count: _I64) -> None:
        reach = min(self.size - 2, _BEAT_MULTIPLES * (self.max_lag + 1) + 2)
        n, floors, size = loud.shape
        acs = self._autocorrelation(
            self._centred(loud.reshape(n * floors, size), np.repeat(count, floors)), reach
        ).reshape(n, floors, reach)
        flat = acs[:, 0, 0] <= 0.0  # nothing within 30 dB of the loudest (a quiet passage): the full envelope
        if flat.any():
            acs[flat] = self._autocorrelation(self._centred(env[flat], count[flat]), reach)[:, None, :]
        acs /= np.maximum(acs[:, :, :1], 1e-300)
        # A peak's mass over three lags: a period between two lags (22.5 frames at 160 BPM) spreads its
        # peak over both, which would let a sharp peak at an integer lag (2 periods: 45) win alone.
        score = (acs[:, :, self.lags - 1] + acs[:, :, self.lags] + acs[:, :, self.lags + 1]) * self.prior
        best = score.max(axis=2, keepdims=True)
        # Metrical level: per floor, the fastest local peak of at least _BEAT_LEVEL_RATIO of the best
        # (the best itself qualifies, so there is always one); the faster of the floors' picks. A
        # snare can sit below the 30 dB floor and only show at 45, eighth hats show at neither.
        edge = np.full((n, floors, 1), -np.inf)
        left = np.concatenate([edge, score[:, :, :-1]], axis=2)
        right = np.concatenate([score[:, :, 1:], edge], axis=2)
        level = (score >= left) & (score >= right) & (score >= _BEAT_LEVEL_RATIO * best) & (best > 0.0)
        # ... and it divides the best lag into whole parts: a syncopation repeating every three
        # sixteenths (lag 22.5 at 120 BPM) peaks high too, but it is no level of the meter.
        ratio = self.lags[np.argmax(score, axis=2)][:, :, None] / self.lags[None, None, :]
        level &= np.abs(ratio / np.maximum(np.rint(ratio), 1.0) - 1.0) <= _BEAT_LEVEL_TOLERANCE
        level |= score == best
        i = np.argmax(level, axis=2).min(axis=1)
        lag = self.lags[i].astype(np.float64)
        ac = acs.sum(axis=1)
        at = np.arange(n)
        # Refine: the peak near each multiple m·lag (within ±5 %), parabolic, weighted by m (a peak m
        # periods out pins the period m times finer).
        total, weight = np.zeros(rows.size), np.zeros(rows.size)
        for m in range(1, _BEAT_MULTIPLES + 1):
            centre = m * lag
            r = np.maximum(1, np.ceil(0.05 * centre)).astype(np.int64)
            width = int(r.max())
            offs = np.arange(-width, width + 1)
            cand = np.rint(centre).astype(np.int64)[:, None] + offs[None, :]
            usable = (np.abs(offs)[None, :] <= r[:, None]) & (cand >= 1) & (cand <= reach - 2)
            vals = np.where(usable, ac[at[:, None], np.clip(cand, 1, reach - 2)], -np.inf)
            j = np.argmax(vals, axis=1)
            k = cand[at, j]
            ok = usable[at, j] & (vals[at, j] > 0.0)
            kc = np.clip(k, 1, reach - 2)
            a, b, c = ac[at, kc - 1], ac[at, kc], ac[at, kc + 1]
            denom = a - 2.0 * b + c
            vertex = ok & (b >= a) & (b >= c) & (denom < 0.0)  # a local peak: the vertex is within ±0.5
            pos = k + np.where(vertex, 0.5 * (a - c) / np.where(vertex, denom, -1.0), 0.0)
            total += np.where(ok, pos, 0.0)
            weight += np.where(ok, float(m), 0.0)
        lag = np.clip(np.where(weight > 0, total / np.maximum(weight, 1), lag), self.min_lag, self.max_lag)
        # A break (drums thinned to the downbeats) shows only the bar: a slower estimate whose peak is
        # no higher than the one at a bar of the current period (3 or 4 of them) keeps the current one.
        current = self.period[rows]
        bars = np.rint(np.asarray(_BEAT_BAR_BEATS, np.float64)[None, :] * current[:, None]).astype(np.int64)
        bar_peak = ac[at[:, None], np.clip(bars, 1, reach - 1)].max(axis=1)
        fresh_peak = ac[at, np.clip(np.rint(lag).astype(np.int64), 1, reach - 1)]
        keep = self.has_tempo[rows] & (lag > 1.5 * current) & (bar_peak >= fresh_peak)
        lag = np.where(keep, current, lag)
        ok = ac[:, 0] > 0.0  # a flat window has no tempo: keep the last one, try again next frame
        self.period[rows[ok]] = lag[ok]
        self.has_tempo[rows[ok]] = True
        self.tempo_due[rows] = count + np.where(ok, self.tempo_every, 1)

    @staticmethod
    def _phase(e: _F64, n: _I64, lag: _F64, expected: _F64) -> _I64:
        """For each row, the comb's best offset d (frames before the decided frame, -1 = look-ahead):
        the envelope summed at d, d+P, d+2P, ... with recent beats weighted more, each offset held
        back by its distance from `expected` (the offset of the beat the last one predicts, a
        period after it; NaN before the first beat). Entries outside a row's window are zeros, so
        they add nothing."""
        k, size = e.shape
        periods = np.floor_divide(n - 2, lag).astype(np.int64)  # whole periods back within the window
        m = np.arange(int(periods.max()))
        offsets = np.ceil(lag).astype(np.int64)  # d = -1 .. ceil(P) - 2
        width = int(offsets.max())
        weights = np.where(m[None, :] < periods[:, None], _PHASE_DECAY ** m[None, :], 0.0)
        # Period m back, offsets d = -1 .. width-2 are the envelope at size-2-d-back(m): one window of
        # `width` values (reversed), starting at size-width-back(m); zeros in front for the earliest.
        back = np.round(m[None, :] * lag[:, None]).astype(np.int64)
        padded = np.concatenate([np.zeros((k, width)), e], axis=1)
        step = padded.strides[1]  # windows[r, i] = padded[r, i : i + width], a view
        windows = np.lib.stride_tricks.as_strided(
            padded, (k, size + 1, width), (padded.strides[0], step, step)
        )
        start = np.maximum(size - back, 0)  # periods beyond a row's own have weight 0
        comb = (windows[np.arange(k)[:, None], start] * weights[:, :, None]).sum(axis=1)[:, ::-1]
        d = np.arange(width)[None, :] - 1.0
        outside = d > (offsets - 2)[:, None]
        # Each offset's distance (in frames, within ±P/2) from the expected one; the scores are made
        # non-negative first, so that holding one back can only lower it.
        off = (np.nan_to_num(expected)[:, None] - d + 0.5 * lag[:, None]) % lag[:, None] - 0.5 * lag[:, None]
        near = np.exp(-0.5 * (off / (_PHASE_SIGMA * lag[:, None])) ** 2)
        near[np.isnan(expected)] = 1.0  # no beat yet: no expectation
        low = np.where(outside, np.inf, comb).min(axis=1, keepdims=True)
        comb = (comb - low) * (_PHASE_HOLD + (1.0 - _PHASE_HOLD) * near)
        comb[outside] = -np.inf
        best: _I64 = np.argmax(comb, axis=1) - 1
        return best


class MusicFeatureBatch(QueuedRuns["tuple[MusicFeatureStream, npt.NDArray[np.float32]]"]):
    """The feature state of many streams at one fps, as arrays with a row per stream (module doc).

    Streams join with `open(sample_rate)`; `run()` computes every row fed since the last run.
    Feeding (from any thread) and running hold one lock, so a run never sees a half-fed chunk.
    """

    def __init__(self, fps: float = 60.0, tempo_every: int = TEMPO_EVERY) -> None:
        if fps <= 0:
            raise ValueError("fps must be positive")
        if tempo_every < 1:
            raise ValueError("tempo_every must be at least 1")
        self.fps = float(fps)
        self.tempo_every = int(tempo_every)
        self.analysis_rate = round(self.fps * HOP)
        self._tables = _analysis_tables(self.analysis_rate)
        super().__init__()
        self._pool = SlotPool()
        # Peak picking as librosa.onset.onset_detect (pre_max 30 ms, post_max 1 frame, pre_avg
        # 100 ms, wait 30 ms, delta 0.07 of the normalised envelope).
        self._pre_avg = max(1, int(0.10 * self.fps))
        self._wait = max(1, int(0.03 * self.fps))
        # Per row: the previous frame's dB mels (and whether there is one), the loudest dB so far,
        # the envelope of frames ..., j-1, j, j+1, j+2 while row j is being finished (newest last),
        # its running maximum, the latest peak's frame, and the CENS history (oldest first).
        self._prev_db = np.zeros((0, N_MELS))
        self._has_prev = np.zeros(0, np.bool_)
        self._db_max = np.zeros(0)
        self._env = np.zeros((0, self._pre_avg + 4))
        self._env_max = np.zeros(0)
        self._last_peak = np.zeros(0, np.int64)
        self._cens = np.zeros((0, _CENS_FRAMES, N_CHROMA))
        self._loud = np.zeros((0, len(_BEAT_LOUD_DB)))  # the loud and low-band flux of frame j+2
        self._low = np.zeros(0)
        self._beats = _BeatRows(self.fps, self.tempo_every)

    def open(self, sample_rate: int) -> MusicFeatureStream:
        """A new stream of this batch, for audio at `sample_rate`."""
        return MusicFeatureStream(sample_rate, self.fps, tempo_every=self.tempo_every, batch=self)

    def _acquire(self) -> SlotLease:
        return self._pool.acquire()

    def _queue(self, stream: MusicFeatureStream, rows: npt.NDArray[np.float32]) -> None:
        self._pending.append((stream, rows))

    def _run(self, pending: list[tuple[MusicFeatureStream, npt.NDArray[np.float32]]]) -> None:
        self._grow(self._pool.size)
        fresh = self._pool.take_fresh()
        if fresh.size:
            self._reset(fresh)
        # Each stream's rows to fill, in order; streams with the most first, so that wave k is a prefix.
        # A wave goes in row order, so that a wave of consecutive rows reads its state as slices.
        dests: dict[int, tuple[MusicFeatureStream, list[npt.NDArray[np.float32]]]] = {}
        for stream, fed in pending:
            dests.setdefault(id(stream), (stream, []))[1].extend(fed)
        queue = sorted(dests.values(), key=lambda sd: (-len(sd[1]), sd[0]._row.index))
        counts = [len(d) for _, d in queue]
        windows = np.empty((len(queue), N_FFT))
        size = len(queue)
        for k in range(counts[0]):
            while counts[size - 1] <= k:  # the streams with no k-th frame leave the waves
                size -= 1
            wave = queue[:size]
            if counts[size - 1] != counts[0]:  # streams of different counts: back in row order
                wave = sorted(wave, key=lambda sd: sd[0]._row.index)
            for i, (s, _) in enumerate(wave):
                start = s._frame * HOP - N_FFT // 2 - s._buf_start
                windows[i] = s._buf[start : start + N_FFT]
            rows = np.fromiter((s._row.index for s, _ in wave), np.int64, size)
            frames = np.fromiter((s._frame for s, _ in wave), np.int64, size)
            out, beat, accent = self._wave(rows, windows[:size], frames)
            for i, (s, d) in enumerate(wave):
                d[k][...] = out[i]
                s._frame += 1
            for hit in np.flatnonzero(beat):
                wave[hit][0]._meter.beat(float(accent[hit]))
        for s, _ in queue:
            s._trim()

    def _grow(self, rows: int) -> None:
        if rows <= self._has_prev.size:
            return
        rows = max(rows, 2 * self._has_prev.size)
        for name in ("_prev_db", "_has_prev", "_db_max", "_env", "_env_max", "_last_peak", "_cens"):
            setattr(self, name, _grown(getattr(self, name), rows))
        for name in ("_loud", "_low"):
            setattr(self, name, _grown(getattr(self, name), rows))
        self._beats.grow(rows)

    def _reset(self, rows: _I64) -> None:
        self._prev_db[rows] = 0.0
        self._has_prev[rows] = False
        self._db_max[rows] = -np.inf
        self._env[rows] = 0.0
        self._env_max[rows] = 1e-6
        self._last_peak[rows] = _NEVER
        self._cens[rows] = 0.0
        self._loud[rows] = 0.0
        self._low[rows] = 0.0
        self._beats.reset(rows)

    def _wave(self, rows: _I64, windows: _F64, frames: _I64) -> tuple[npt.NDArray[np.float32], _Bool, _F64]:
        """One frame of each of `rows` (their analysis windows, frame numbers): feature rows, beats and
        beat accents."""
        t = self._tables
        first = int(rows[0])
        # Rows come in increasing order: they are consecutive when the last is size - 1 past the first.
        ix: _Index = slice(first, first + rows.size) if rows[-1] - first == rows.size - 1 else rows
        power = np.abs(np.fft.rfft(windows * t.window, axis=1)) ** 2
        mel = _mel_bands(t, power)
        mel_db = 10.0 * np.log10(np.maximum(mel, AMIN))
        # librosa floors at the whole song's maximum - 80 dB; the loudest frame so far is the causal stand-in.
        db_max = np.maximum(self._db_max[ix], mel_db.max(axis=1))
        self._db_max[ix] = db_max
        np.maximum(mel_db, (db_max - TOP_DB)[:, None], out=mel_db)
        # This window gives the envelope of frame j+2: mean positive dB flux from frame j-1 to j.
        prev_db = self._prev_db[ix]
        flux = np.add.reduce(np.maximum(0.0, mel_db - prev_db), axis=1) / N_MELS
        # The beat tracker's loud flux: both frames floored 30 dB below the loudest so far (module doc).
        loud = np.empty((rows.size, len(_BEAT_LOUD_DB)))
        for f, floor_db in enumerate(_BEAT_LOUD_DB):
            floor = (db_max - floor_db)[:, None]
            rise = np.maximum(0.0, np.maximum(mel_db, floor) - np.maximum(prev_db, floor))
            loud[:, f] = np.add.reduce(rise, axis=1) / N_MELS
            if f == 0:
                low = np.add.reduce(rise[:, _ACCENT_BANDS], axis=1) / (
                    _ACCENT_BANDS.stop - _ACCENT_BANDS.start
                )
        no_prev = ~self._has_prev[ix]
        flux[no_prev], loud[no_prev], low[no_prev] = 0.0, 0.0, 0.0
        self._prev_db[ix], self._has_prev[ix] = mel_db, True
        env = self._env[ix]
        env[:, :-1] = env[:, 1:]
        env[:, -1] = flux
        self._env[ix] = env

        out = np.empty((rows.size, FEATURE_DIM), np.float32)
        out[:, _ENVELOPE] = env[:, -3]
        out[:, _MFCC] = np.einsum("fm,km->fk", mel_db, t.dct)
        out[:, _CHROMA] = self._chroma_cens(ix, np.einsum("fb,cb->fc", power, t.chroma))
        out[:, _PEAK] = self._peaks(rows, ix, env, frames)
        # The tracker takes frame j+1's values: this window's loud and low-band flux wait one wave.
        beat, accent = self._beats.step(rows, ix, env[:, -2], self._loud[ix], self._low[ix], frames)
        self._loud[ix], self._low[ix] = loud, low
        out[:, BEAT_COLUMN] = beat
        return out, beat, accent

    def _chroma_cens(self, ix: _Index, chroma: _F64) -> _F64:
        total = chroma.sum(axis=1, keepdims=True)
        c = np.divide(chroma, total, out=np.zeros_like(chroma), where=total > 1e-12)
        # CENS quantisation (librosa.feature.chroma_cens: thresholds 0.4, 0.2, 0.1, 0.05 → 1..4),
        # then a causal smoothing and L2 normalisation.
        hist = self._cens[ix]
        hist[:, :-1] = hist[:, 1:]
        hist[:, -1] = np.digitize(c, _CENS_STEPS, right=True)  # thresholds below each value
        self._cens[ix] = hist
        smooth = (hist * self._tables.cens_window[None, :, None]).sum(axis=1)
        norm = np.sqrt((smooth * smooth).sum(axis=1, keepdims=True))
        unit: _F64 = np.divide(smooth, norm, out=smooth.copy(), where=norm > 1e-12)
        return unit

    def _peaks(self, rows: _I64, ix: _Index, env: _F64, frames: _I64) -> _Bool:
        # Normalised by a slowly decaying running maximum (the offline version uses the song's range).
        env_max = np.maximum(self._env_max[ix] * 0.999, env[:, -3])
        self._env_max[ix] = env_max
        h = env / env_max[:, None]
        centre = h[:, -3]
        peak = (
            (centre >= h[:, -4])
            & (centre >= h[:, -2])
            & (centre >= np.add.reduce(h[:, -3 - self._pre_avg : -2], axis=1) / (self._pre_avg + 1) + 0.07)
            & (frames - self._last_peak[ix] > self._wait)
        )
        self._last_peak[rows[peak]] = frames[peak]
        is_peak: _Bool = peak
        return is_peak


class MusicFeatureStream:
    """One session's streaming music features, a row of a `MusicFeatureBatch` (its own batch of one
    unless given one). ``push(pcm)`` → ``(k, 35)`` float32 rows (k may be 0)."""

    def __init__(
        self,
        sample_rate: int,
        fps: float = 60.0,
        *,
        tempo_every: int = TEMPO_EVERY,
        batch: MusicFeatureBatch | None = None,
    ) -> None:
        if sample_rate <= 0 or fps <= 0:
            raise ValueError("sample_rate and fps must be positive")
        if batch is None:
            batch = MusicFeatureBatch(fps, tempo_every)
        elif (batch.fps, batch.tempo_every) != (float(fps), tempo_every):
            raise ValueError("a stream of a batch has the batch's fps and tempo_every")
        self.batch = batch
        self.sample_rate = int(sample_rate)
        self.fps = batch.fps
        self.analysis_rate = batch.analysis_rate
        self.latency_samples = N_FFT // 2  # at analysis_rate, after the row's own time (+ the resampler's)
        self.latency_ms = 1000.0 * self.latency_samples / self.analysis_rate
        self._resampler = (
            None
            if self.sample_rate == self.analysis_rate
            else soxr.ResampleStream(self.sample_rate, self.analysis_rate, 1, dtype="float64", vr=True)
        )
        self._row = batch._acquire()  # this stream's row of the batch's arrays, freed with the stream
        self._meter = MeterTracker()
        # Analysis buffer: _buf[i] is resampled sample _buf_start + i; starts with half a window of
        # zeros so frame 0 is centred on sample 0, like librosa's centred frames.
        self._buf = np.zeros(N_FFT // 2, np.float64)
        self._buf_start = -(N_FFT // 2)
        self._fed = 0  # frames handed out by `feed` (complete in the buffer)
        self._frame = 0  # frames computed by the batch

    @property
    def meter(self) -> Meter:
        m, beats = self._meter, self.batch._beats
        tempo = 60.0 * self.fps / float(beats.period[self._row.index]) if self._frame else _BEAT_PRIOR_BPM
        return Meter(tempo, m.beats_per_bar, m.beat_in_bar, m.bar, m.bar // _BARS_PER_PHRASE)

    def feed(self, pcm: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """Take mono PCM (int16, or float in [-1, 1]); returns the rows this chunk completes, filled by
        the batch's next `run()`."""
        x = np.asarray(pcm)
        if x.ndim != 1:
            raise ValueError(f"expected mono PCM (1-D), got shape {x.shape}")
        samples = x.astype(np.float64) / 32768.0 if x.dtype == np.int16 else x.astype(np.float64)
        if self._resampler is not None:
            samples = self._resampler.resample_chunk(samples)
        with self.batch._lock:
            self._buf = np.concatenate([self._buf, samples])
            end = self._buf_start + self._buf.size  # resampled samples [.., end) are here
            complete = (end - N_FFT // 2) // HOP + 1  # frame j's window ends at j·HOP + N_FFT/2
            rows = np.empty((max(0, complete - self._fed), FEATURE_DIM), np.float32)
            if rows.size:
                self._fed += rows.shape[0]
                self.batch._queue(self, rows)
        return rows

    def push(self, pcm: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """Feed mono PCM and run the batch: the rows this chunk completed."""
        rows = self.feed(pcm)
        self.batch.run()
        return rows

    def _trim(self) -> None:
        """Drop the audio no frame still to compute needs."""
        drop = self._frame * HOP - N_FFT // 2 - self._buf_start
        if drop > 0:
            self._buf = self._buf[drop:]
            self._buf_start += drop

    def _skip_to_fed(self) -> None:
        self._frame = self._fed
        self._trim()
