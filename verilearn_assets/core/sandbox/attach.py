"""The attach transport: protocol frames over a container's stdin/stdout (Docker API).

`docker attach` (POST /containers/{id}/attach, upgraded to a raw stream) works wherever
the Docker API does, tcp:// + TLS included, so a slot on a host on another machine
needs no socket or directory of ours. Without a tty, Docker multiplexes what the
container writes: each chunk comes behind an 8-byte header (stream type, 3 zero bytes,
big-endian length). Only stdout is attached; its chunks are joined back into the
worker's byte stream and the length-prefixed JSON frames of `protocol` are read from
it. Stdin is not multiplexed: frames are written as they are.

The socket docker-py hands over is a blocking one (an SSL socket over TLS, which must
not be read and written from two threads at once), so each channel does all its I/O on
one thread of its own, one request/reply round trip at a time.
"""

from __future__ import annotations

import asyncio
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from verilearn_assets.core.isolation.docker import MUX_HEADER, STDERR, STDOUT
from verilearn_assets.core.sandbox import protocol


class AttachChannel:
    """One slot's frame channel over its attach stream (see module doc)."""

    def __init__(self, attached: Any, label: str) -> None:
        self._holder = attached  # keeps docker-py's socket wrapper (and response) alive
        self.sock: socket.socket = getattr(attached, "_sock", attached)
        self.label = label
        self._mux = bytearray()  # raw bytes from Docker, not yet demultiplexed
        self._out = bytearray()  # the worker's stdout bytes
        self._closed = False
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"attach-{label}")

    # --- blocking side (runs on the channel's thread)
    def _recv(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{self.label}: no reply in time")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise protocol.ProtocolError(f"{self.label}: the attach stream closed")
        self._mux += chunk
        while len(self._mux) >= MUX_HEADER.size:
            kind, size = MUX_HEADER.unpack_from(self._mux)
            if kind not in (STDOUT, STDERR):
                raise protocol.ProtocolError(f"{self.label}: bad stream header (type {kind})")
            if len(self._mux) < MUX_HEADER.size + size:
                break
            payload = self._mux[MUX_HEADER.size : MUX_HEADER.size + size]
            del self._mux[: MUX_HEADER.size + size]
            if kind == STDOUT:
                self._out += payload

    def _read_exact(self, n: int, deadline: float) -> bytes:
        while len(self._out) < n:
            self._recv(deadline)
        data = bytes(self._out[:n])
        del self._out[:n]
        return data

    def _read_frame(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        (length,) = protocol.HEADER.unpack(self._read_exact(protocol.HEADER.size, deadline))
        return protocol.decode_body(self._read_exact(protocol.check_length(length), deadline))

    def _roundtrip(self, message: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        if self._closed:
            raise protocol.ProtocolError(f"{self.label}: channel closed")
        if message is not None:
            self.sock.settimeout(timeout)
            self.sock.sendall(protocol.encode(message))
        return self._read_frame(timeout)

    def _close_socket(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        close = getattr(self._holder, "close", None)
        if close is not None and self._holder is not self.sock:
            try:
                close()
            except OSError:
                pass

    # --- asyncio side
    async def request(self, message: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        """Send `message` (None: send nothing) and return the next frame."""
        if self._closed:
            raise protocol.ProtocolError(f"{self.label}: channel closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._io, self._roundtrip, message, timeout)

    def close(self) -> None:
        """Unblock a pending read now (shutdown), close once the thread is done with it."""
        if self._closed:
            return
        self._closed = True
        try:
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)  # not SSLSocket's: no TLS state
        except OSError:
            pass
        self._io.submit(self._close_socket)
        self._io.shutdown(wait=False)
