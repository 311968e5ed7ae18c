"""Length-prefixed pickles over pipes: how gbstats.mixed.clean_process and its R server
(gbstats.mixed.r_server) talk. Apart from both, so that the caller's side does not import
the server's, which imports the fit functions (gbstats.mixed.lmm) for its warm-up."""
from __future__ import annotations

import os
import pickle
import struct


def read_message(fd: int):
    header = _read_exactly(fd, 8)
    if header is None:
        return None
    (size,) = struct.unpack("<Q", header)
    body = _read_exactly(fd, size)
    return None if body is None else pickle.loads(body)


def encode(value) -> bytes:
    """A length-prefixed pickle (read back by `read_message`)."""
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return struct.pack("<Q", len(body)) + body


def write_bytes(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_message(fd: int, value) -> None:
    write_bytes(fd, encode(value))


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
