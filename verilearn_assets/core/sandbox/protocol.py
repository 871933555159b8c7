"""Framing shared by the host and the worker: a 4-byte big-endian length, then JSON.

Only JSON crosses the boundary, so the host parses sandbox output as data and never
executes it. Frames are size-capped on read: a hostile worker cannot make the host
allocate without bound. Standalone (stdlib only): the worker imports it inside the jail.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024


class ProtocolError(RuntimeError):
    """The peer sent a malformed or oversized frame, or hung up mid-frame."""


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    if len(body) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME}")
    return HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    try:
        message = json.loads(body)
    except ValueError as exc:
        raise ProtocolError(f"frame is not JSON: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a JSON object")
    return message


def check_length(length: int) -> int:
    if length > MAX_FRAME:
        raise ProtocolError(f"peer announced a frame of {length} bytes (cap {MAX_FRAME})")
    return length


def read_exact_fd(fd: int, n: int) -> bytes:
    """Blocking read of exactly n bytes from a file descriptor (EOF -> ProtocolError)."""
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise ProtocolError("peer closed the channel")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame_fd(fd: int) -> dict[str, Any]:
    (length,) = HEADER.unpack(read_exact_fd(fd, HEADER.size))
    return decode_body(read_exact_fd(fd, check_length(length)))


def write_frame_fd(fd: int, message: dict[str, Any]) -> None:
    data = memoryview(encode(message))
    while data:
        written = os.write(fd, data)
        data = data[written:]
