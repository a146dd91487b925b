"""Client -> bridge messages on the request socket, decoded and validated.

`decode_request` is the single entry point: it either returns a typed request or raises ProtocolError
with the code the error reply carries. Validation here is everything that can be checked without
knowing the bridge's state (sessions, pipelines); the server checks the rest.

The wire schema is a set of msgspec Structs, one per `op` (tagged by `op`), so one C pass both parses
and type-checks a message: every field's msgpack type, integer range and string length is declared
once below, and docs/protocol.md section 4 states the same limits. A failure is mapped to the stable
error codes of docs/protocol.md section 6; messages never echo more than a short prefix of a value.

Nesting depth: msgspec 0.23 has no depth option; it enters the interpreter's recursion guard at every
nesting level (of a value it decodes or skips), so a message nested deeper than about 1000 levels raises
RecursionError at that level, before going further (checked on a 256 KiB thread stack). That is the
bound, and every decode here turns it into MALFORMED. A pre-scan of the raw bytes in Python would cost
~0.2 us per msgpack object, 15 ms for a legal 4096-item `inputs` message: more than the decode itself.

Parsed once: a request that fails is read again at most once more, for its envelope (`op`, `v`, `id`,
`session`, scalars only), which gives its version error and what its error reply echoes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

import msgspec
import numpy as np

from bridge.protocol.batch_frames import BATCH_GROUP_OPTION, check_batch_group
from bridge.protocol.codec import F32LE, ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.jpeg import JpegError, JpegHeader, read_header
from bridge.protocol.versions import PROTOCOL_VERSION, SESSION_ID_LENGTH

MAX_IMAGE_SIDE = 4096
MAX_IMAGE_PIXELS = 2048 * 1024  # 1920x1080 fits; pre-processing cost grows with pixels
# A JPEG image input's bytes (minor revision 1.3): a 1920x1080 frame at quality 95 is ~0.6 MB; 4 MiB
# leaves room for noise at quality 100 without letting a JPEG cost more wire than its rgb8 would.
MAX_JPEG_BYTES = 4 * 1024 * 1024
IMAGE_FORMATS = ("rgb8", "jpeg")  # announced in the hello reply
MIN_AUDIO_RATE = 8000
MAX_AUDIO_RATE = 192000
MAX_AUDIO_INPUT_S = 1.0  # seconds of audio in one input, at any rate
MAX_CALIBRATION_S = 8.0  # seconds of audio in one voice calibration
MAX_FEATURE_ROWS = 1024
MAX_FEATURE_COLS = 4096
MAX_NAME_CHARS = 64  # pipeline, model, option names and string option values
MAX_CLIENT_CHARS = 256
MAX_OPTIONS = 16
MAX_INPUT_ITEMS = 4096  # items of one multiplexed `inputs` message (the largest batch tier)
# Failed items after which the rest of an `inputs` message is refused unexamined: 4096 junk items
# cost ~30 ms of the I/O thread's GIL, 256 about 2 ms.
MAX_ITEM_FAILURES = 256
# Every op but input, inputs and calibrate (the ones that carry data) is legal in under 10 KB (a full
# `open`); one larger has a field over its bound and is refused before its values are decoded.
MAX_SMALL_REQUEST_BYTES = 64 * 1024
UINT64_MAX = 2**64 - 1
INT64_MAX = 2**63 - 1
_ECHO_CHARS = 160  # longest error message built from a decoder's text


@dataclass(frozen=True)
class Hello:
    id: int
    client: str


@dataclass(frozen=True)
class ListModels:
    id: int


@dataclass(frozen=True)
class OpenSession:
    id: int
    pipeline: str
    model: str | None
    options: dict[str, Any] = field(default_factory=dict)  # the pipeline's (batch_group taken out)
    batch_group: str = ""  # the `batch_group` option (docs/protocol.md 5.3), checked; "" for none


@dataclass(frozen=True)
class CloseSession:
    id: int
    session: str


@dataclass(frozen=True)
class Calibrate:
    """Take the session's next tracked face as its neutral (face tracking; docs/protocol.md 5.1), or,
    with audio, the five vowels of the session's voice (speech; docs/protocol.md 5.2)."""

    id: int
    session: str
    rate: int = 0
    samples: np.ndarray | None = None  # (n,) int16 or float32 mono, read-only view


@dataclass(frozen=True)
class Ping:
    id: int
    session: str | None  # a ping naming a session keeps it from being reaped


@dataclass(frozen=True)
class ImageInput:
    kind: ClassVar[str] = "image"
    id: int
    session: str
    seq: int
    t_capture_ns: int
    ack: bool
    pixels: np.ndarray  # (height, width, 3) uint8, read-only view of the message

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])


@dataclass(frozen=True)
class JpegInput:
    """An image input sent as JPEG (minor revision 1.3), its header read and bounded, its pixels not
    yet decoded: bridge.vision.jpeg.decoded runs libjpeg-turbo on a prepare thread
    (bridge.serving.scheduler), only for an image that a newer one did not supersede first. Pipelines
    see the ImageInput it gives."""

    kind: ClassVar[str] = "image"
    id: int
    session: str
    seq: int
    t_capture_ns: int
    ack: bool
    header: JpegHeader
    data: memoryview  # the JPEG bytes, a view of the message

    @property
    def width(self) -> int:
        return self.header.width

    @property
    def height(self) -> int:
        return self.header.height



@dataclass(frozen=True)
class AudioInput:
    kind: ClassVar[str] = "audio"
    id: int
    session: str
    seq: int
    t_capture_ns: int
    ack: bool
    rate: int
    samples: np.ndarray  # (n,) int16 or float32 mono, n >= 1, read-only view


@dataclass(frozen=True)
class FeaturesInput:
    kind: ClassVar[str] = "features"
    id: int
    session: str
    seq: int
    t_capture_ns: int
    ack: bool
    rows: np.ndarray  # (rows, cols) float32, read-only view


Input = ImageInput | JpegInput | AudioInput | FeaturesInput


@dataclass(frozen=True)
class ItemError:
    """An item of an `inputs` message that failed validation: answered as its own `input` would be."""

    error: ProtocolError
    id: int  # the item's own `id` (0 when it has none or it is unreadable)
    session: str | None  # echoed when short and readable


@dataclass(frozen=True)
class Inputs:
    """A multiplexed `inputs` message (protocol 1, minor 1): many sessions' inputs in one message.
    Its items stay encoded until the bridge takes them one by one (`decode_item`): each is validated
    alone, so a bad item fails only itself, and a message cut short after MAX_ITEM_FAILURES failed
    items costs no decoding of the rest."""

    id: int
    items: tuple[msgspec.Raw, ...]


Request = Hello | ListModels | OpenSession | CloseSession | Calibrate | Ping | Input | Inputs
InputKind = Literal["image", "audio", "features"]

# ------------------------------------------------------------------------------------ wire schema
# uint64: msgpack cannot carry more than 2^64 - 1, so only the lower bound needs saying.
_U64 = Annotated[int, msgspec.Meta(ge=0)]
_Nanos = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]  # every client's int64 time type holds it
_SessionId = Annotated[str, msgspec.Meta(max_length=SESSION_ID_LENGTH)]  # longer can name no session
_Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME_CHARS)]
_OptionValue = bool | int | float | _Name
_Options = Annotated[dict[_Name, _OptionValue], msgspec.Meta(max_length=MAX_OPTIONS)]
_Side = Annotated[int, msgspec.Meta(ge=1, le=MAX_IMAGE_SIDE)]
_Rate = Annotated[int, msgspec.Meta(ge=MIN_AUDIO_RATE, le=MAX_AUDIO_RATE)]
_Rows = Annotated[int, msgspec.Meta(ge=1, le=MAX_FEATURE_ROWS)]
_Cols = Annotated[int, msgspec.Meta(ge=1, le=MAX_FEATURE_COLS)]


class _Message(msgspec.Struct, tag_field="op", kw_only=True):
    id: _U64 = 0
    v: int = PROTOCOL_VERSION


class _Hello(_Message, tag="hello"):
    client: Annotated[str, msgspec.Meta(max_length=MAX_CLIENT_CHARS)] | None = None


class _List(_Message, tag="list"):
    pass


class _Open(_Message, tag="open"):
    pipeline: _Name
    model: _Name | None = None
    options: _Options | None = None


class _Close(_Message, tag="close"):
    session: _SessionId


class _Calibrate(_Message, tag="calibrate"):
    session: _SessionId
    rate: _Rate | None = None
    format: _Name | None = None
    data: memoryview | None = None


class _Ping(_Message, tag="ping"):
    session: _SessionId | None = None


class _InputItem(msgspec.Struct, kw_only=True):
    """What an `input` carries besides `op` and `v`: an `inputs` item, and the body of `input`."""

    id: _U64 = 0
    session: _SessionId
    kind: InputKind
    seq: _U64
    t_capture_ns: _Nanos
    data: memoryview  # zero-copy: a view of the received message
    ack: bool | None = None
    # Per kind (checked in _input): image width, height, format; audio rate, format; features rows, cols.
    width: _Side | None = None
    height: _Side | None = None
    format: _Name | None = None
    rate: _Rate | None = None
    rows: _Rows | None = None
    cols: _Cols | None = None


class _Input(_InputItem, tag_field="op", tag="input"):
    v: int = PROTOCOL_VERSION


class _Inputs(_Message, tag="inputs"):
    # Items stay undecoded here: each is decoded alone, so that one bad item fails only itself.
    items: Annotated[list[msgspec.Raw], msgspec.Meta(min_length=1, max_length=MAX_INPUT_ITEMS)]


_Scalar = str | int | float | bool | None


class _Envelope(msgspec.Struct):
    """What a failed request's error needs: its `op` (what a large request is, without decoding its
    other values), `v`, and what the reply may echo. Scalars only: where one of them is an array or
    a map (a 4M-element `session`) the read stops at its header and the envelope is taken as empty,
    so it costs no walk over that value."""

    op: _Scalar = None
    v: _Scalar = None
    id: _Scalar = None
    session: _Scalar = None


_ITEM_DECODER = msgspec.msgpack.Decoder(_InputItem)
_ENVELOPE_DECODER = msgspec.msgpack.Decoder(_Envelope)
_OPS = ("calibrate", "close", "hello", "input", "inputs", "list", "open", "ping")
_DATA_OPS = ("calibrate", "input", "inputs")  # the ops whose messages may be large


class RequestError(ProtocolError):
    """A request refused as a whole, with what its error reply echoes (`id`, `session`)."""

    def __init__(self, error: ProtocolError, request_id: int = 0, session: str | None = None) -> None:
        super().__init__(error.code, error.message)
        self.request_id = request_id
        self.session = session


def decode_request(payload: bytes | memoryview, max_bytes: int | None = None) -> Request:
    """The typed request, or RequestError: the code, and the `id` and `session` its reply echoes
    (none for MALFORMED and TOO_LARGE)."""
    if max_bytes is not None and len(payload) > max_bytes:
        raise RequestError(
            ProtocolError(ErrorCode.TOO_LARGE, f"message of {len(payload)} bytes exceeds {max_bytes}")
        )
    envelope: _Envelope | None = None
    read = False  # whether `envelope` was read (None then: bytes that are not msgpack)
    try:
        if len(payload) > MAX_SMALL_REQUEST_BYTES:
            envelope, read = _read_envelope(payload), True
            _refuse_oversized(payload, envelope)
        try:
            message = _DECODER.decode(payload)
        except msgspec.ValidationError as exc:
            if not read:
                envelope, read = _read_envelope(payload), True
            raise _version_error(envelope) or _code_for(str(exc), "request") from None
        except msgspec.DecodeError:
            raise ProtocolError(ErrorCode.MALFORMED, "not a msgpack message") from None
        return _typed(message)
    except RecursionError:
        raise RequestError(_too_deep("request")) from None
    except ProtocolError as exc:
        if exc.code in (ErrorCode.MALFORMED, ErrorCode.TOO_LARGE):
            raise RequestError(exc) from None
        if not read:
            envelope = _read_envelope(payload)
        raise RequestError(exc, *_echo(envelope)) from None


def _too_deep(what: str) -> ProtocolError:
    return ProtocolError(ErrorCode.MALFORMED, f"{what} nested deeper than the decoder allows")


def _read_envelope(payload: bytes | memoryview | msgspec.Raw) -> _Envelope | None:
    """The envelope (one pass over the message): empty where it is not a map (or nested too deep),
    None where it is not msgpack at all."""
    try:
        return _ENVELOPE_DECODER.decode(payload)
    except (msgspec.ValidationError, RecursionError):
        return _Envelope()
    except msgspec.DecodeError:
        return None


_Wire = _Hello | _List | _Open | _Close | _Calibrate | _Ping | _Input | _Inputs

_DECODER = msgspec.msgpack.Decoder(_Wire)


def _typed(message: _Wire) -> Request:
    if message.v != PROTOCOL_VERSION:
        raise _unsupported(message.v)
    if isinstance(message, _Input):
        return _input(message)
    if isinstance(message, _Inputs):
        return Inputs(message.id, tuple(message.items))
    if isinstance(message, _Ping):
        return Ping(message.id, message.session)
    if isinstance(message, _Open):
        options = message.options or {}
        group = options.pop(BATCH_GROUP_OPTION, None)  # the bridge's option, for every pipeline
        batch_group = "" if group is None else check_batch_group(group)
        return OpenSession(message.id, message.pipeline, message.model, options, batch_group)
    if isinstance(message, _Close):
        return CloseSession(message.id, message.session)
    if isinstance(message, _Calibrate):
        if message.data is None:
            return Calibrate(message.id, message.session)
        rate = _require(message.rate, "rate", "calibration")
        samples = _audio(rate, message.format, message.data, "calibration", MAX_CALIBRATION_S)
        return Calibrate(message.id, message.session, rate, samples)
    if isinstance(message, _Hello):
        return Hello(message.id, message.client or "")
    return ListModels(message.id)


def decode_item(raw: msgspec.Raw) -> Input | ItemError:
    """One `inputs` item, decoded and checked exactly as an `input` with the same keys."""
    try:
        return _input(_ITEM_DECODER.decode(raw))
    except msgspec.ValidationError as exc:
        error = _code_for(str(exc), "input item")
    except msgspec.DecodeError:
        error = ProtocolError(ErrorCode.MALFORMED, "input item: not a msgpack map")
    except RecursionError:
        return ItemError(_too_deep("input item"), 0, None)
    except ProtocolError as exc:
        error = exc
    return ItemError(error, *_echo(_read_envelope(raw)))


def _echo(echo: _Envelope | None) -> tuple[int, str | None]:
    """Best effort: the `id` and `session` an error reply echoes even when the request failed
    validation; 0 and None where absent, of the wrong type or out of range."""
    if echo is None:
        return 0, None
    request_id = echo.id if type(echo.id) is int and 0 <= echo.id <= UINT64_MAX else 0
    session = echo.session
    return request_id, session if isinstance(session, str) and len(session) <= SESSION_ID_LENGTH else None


def _refuse_oversized(payload: bytes | memoryview, envelope: _Envelope | None) -> None:
    """Raise for a request over MAX_SMALL_REQUEST_BYTES whose op carries no data: decoding and then
    length-checking a 4 MB string costs ~0.5 ms of the I/O thread's GIL, reading its `op` ~1 us.
    A payload that is not a map with a str `op` is left to the full decode, which says why."""
    op = envelope.op if envelope is not None else None
    if not isinstance(op, str):
        return
    if op in _DATA_OPS:
        return
    version = _version_error(envelope)
    if version is not None:
        raise version
    if op not in _OPS:
        raise ProtocolError(ErrorCode.UNKNOWN_OP, f"unknown op (known: {', '.join(_OPS)})")
    raise ProtocolError(
        ErrorCode.BAD_VALUE,
        f"{op} request of {len(payload)} bytes, over the {MAX_SMALL_REQUEST_BYTES} any {op} within "
        "its fields' bounds fits in (only calibrate, input and inputs carry data)",
    )


def _unsupported(version: int) -> ProtocolError:
    return ProtocolError(
        ErrorCode.UNSUPPORTED_VERSION,
        f"protocol version {version} not supported (bridge speaks {PROTOCOL_VERSION})",
    )


def _version_error(envelope: _Envelope | None) -> ProtocolError | None:
    """The error of a request's `v` (bad type, another version), or of bytes that are not msgpack
    (no envelope); None when `v` is absent or this version. Checked before what the decoder found:
    another version may have another layout."""
    if envelope is None:
        return ProtocolError(ErrorCode.MALFORMED, "not a msgpack message")
    version = envelope.v
    if version is None:
        return None
    if type(version) is not int:
        return ProtocolError(
            ErrorCode.BAD_TYPE, f"request: Expected `int`, got `{_wire_type(version)}` - at `$.v`"
        )
    return None if version == PROTOCOL_VERSION else _unsupported(version)


def _wire_type(value: object) -> str:
    return {str: "str", bytes: "bytes", float: "float", bool: "bool"}.get(type(value), "object")


def _code_for(text: str, what: str) -> ProtocolError:
    """The code of a validation failure of a request (or of one `inputs` item), from msgspec's text."""
    if "missing required field" in text:
        return ProtocolError(ErrorCode.MISSING_FIELD, _clip(f"{what}: {text}"))
    if " - at " not in text or text.endswith("in `$`"):  # not a map, or a map key that is not a str
        return ProtocolError(ErrorCode.MALFORMED, _clip(f"{what} must be a map with str keys: {text}"))
    if text.startswith("Invalid value") and text.endswith("`$.op`"):
        return ProtocolError(ErrorCode.UNKNOWN_OP, f"unknown op (known: {', '.join(_OPS)})")
    if ", got `" in text:
        return ProtocolError(ErrorCode.BAD_TYPE, _clip(f"{what}: {text}"))
    return ProtocolError(ErrorCode.BAD_VALUE, _clip(f"{what}: {text}"))  # a range, length or enum


def _clip(text: str) -> str:
    """Bound what an error reply carries: the decoder's text quotes the offending value whole."""
    if len(text) <= _ECHO_CHARS:
        return text
    return text[: _ECHO_CHARS - 50] + " ... " + text[-45:]


def _require(value: int | str | None, key: str, kind: str) -> Any:
    if value is None:
        raise ProtocolError(ErrorCode.MISSING_FIELD, f"{kind} input: missing field '{key}'")
    return value


def _input(m: _InputItem) -> Input:
    ack = bool(m.ack)
    data = m.data
    if m.kind == "image":
        if m.format == "jpeg":
            return _jpeg_input(m, ack)
        width = _require(m.width, "width", "image")
        height = _require(m.height, "height", "image")
        _check_pixels(width, height)
        if (m.format or "rgb8") != "rgb8":
            raise ProtocolError(
                ErrorCode.BAD_VALUE, f"image input: format not supported (one of {', '.join(IMAGE_FORMATS)})"
            )
        if len(data) != width * height * 3:
            raise ProtocolError(
                ErrorCode.BAD_SIZE,
                f"image input: {width}x{height} rgb8 needs {width * height * 3} bytes, got {len(data)}",
            )
        pixels = np.frombuffer(data, dtype=np.uint8).reshape(height, width, 3)
        return ImageInput(m.id, m.session, m.seq, m.t_capture_ns, ack, pixels)
    if m.kind == "audio":
        rate = _require(m.rate, "rate", "audio")
        samples = _audio(rate, m.format, data, "audio", MAX_AUDIO_INPUT_S)
        return AudioInput(m.id, m.session, m.seq, m.t_capture_ns, ack, rate, samples)
    rows = _require(m.rows, "rows", "features")
    cols = _require(m.cols, "cols", "features")
    if len(data) != rows * cols * 4:
        raise ProtocolError(
            ErrorCode.BAD_SIZE,
            f"features input: {rows}x{cols} f32le needs {rows * cols * 4} bytes, got {len(data)}",
        )
    values = np.ndarray((rows, cols), F32LE, data)
    # The sum is finite when every value is (one C call); only an overflowing or non-finite sum
    # needs the element-wise check. At thousands of sessions this runs 10^5 times a second.
    if not math.isfinite(values.sum()) and not np.isfinite(values).all():
        raise ProtocolError(ErrorCode.BAD_VALUE, "features input: values must be finite")
    return FeaturesInput(m.id, m.session, m.seq, m.t_capture_ns, ack, values)


def _check_pixels(width: int, height: int) -> None:
    if width * height > MAX_IMAGE_PIXELS:
        raise ProtocolError(
            ErrorCode.BAD_VALUE, f"image input: {width}x{height} is over {MAX_IMAGE_PIXELS} pixels"
        )


def _jpeg_input(m: _InputItem, ack: bool) -> JpegInput:
    """A JPEG image input, checked as far as its header goes (the I/O thread: microseconds, nothing
    allocated): its size, its dimensions against the image bounds (a bomb, huge dimensions in a small
    file, is refused here) and against `width` and `height` when sent. Its pixels are decoded later."""
    data = m.data
    if len(data) > MAX_JPEG_BYTES:
        raise ProtocolError(
            ErrorCode.BAD_VALUE, f"image input: {len(data)} bytes of JPEG is over {MAX_JPEG_BYTES}"
        )
    try:
        header = read_header(data)
    except JpegError as exc:
        raise ProtocolError(ErrorCode.BAD_IMAGE, f"image input: {exc}") from None
    width, height = header.width, header.height
    if width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE:
        raise ProtocolError(
            ErrorCode.BAD_VALUE, f"image input: JPEG of {width}x{height}, a side over {MAX_IMAGE_SIDE}"
        )
    _check_pixels(width, height)
    if (m.width is not None and m.width != width) or (m.height is not None and m.height != height):
        raise ProtocolError(
            ErrorCode.BAD_SIZE,
            f"image input: the JPEG is {width}x{height}, the input says {m.width}x{m.height}",
        )
    return JpegInput(m.id, m.session, m.seq, m.t_capture_ns, ack, header, data)


def _audio(rate: int, fmt: str | None, data: memoryview, kind: str, max_s: float) -> np.ndarray:
    """Mono PCM of an audio input or a voice calibration, checked: format, whole samples, length, finite."""
    dtype = _AUDIO_FORMATS.get(_require(fmt, "format", kind))
    if dtype is None:
        raise ProtocolError(ErrorCode.BAD_VALUE, f"{kind} input: format not supported (s16le or f32le)")
    if not data or len(data) % dtype.itemsize:
        raise ProtocolError(
            ErrorCode.BAD_SIZE,
            f"{kind} input: {len(data)} bytes is not a whole, non-zero number of {fmt} samples",
        )
    count = len(data) // dtype.itemsize
    if count > max_s * rate:
        raise ProtocolError(
            ErrorCode.BAD_VALUE, f"{kind} input: {count / rate:.3f} s of audio in one input is over {max_s} s"
        )
    samples = np.frombuffer(data, dtype=dtype)
    if dtype == F32LE and not np.isfinite(samples).all():
        raise ProtocolError(ErrorCode.BAD_VALUE, f"{kind} input: samples must be finite")
    return samples


_AUDIO_FORMATS: dict[str, np.dtype[Any]] = {"s16le": np.dtype("<i2"), "f32le": F32LE}
