"""holdfast's last-known-good snapshot file, read just enough to tell a whole
file from a damaged one and to list what it holds."""

import hashlib
import struct

# The file format (src/snapshot/snapshot_file.h): magic, format version,
# payload size, SHA-256 of the payload, payload. Format 2 appends the rollout
# policies; format 3 also has each resource's version after its name. Only
# used to tell a whole file from a damaged one and to see which backend its
# routes name.
MAGIC = b"HFSNAP01"
HEADER_SIZE = 8 + 4 + 8 + 32


class DamagedFile(AssertionError):
    pass


def check_snapshot_file(data: bytes) -> list:
    """Checks a snapshot file's framing and checksum; returns its resources
    as (type_url, name, bytes). Raises DamagedFile."""
    if len(data) < HEADER_SIZE or data[:8] != MAGIC:
        raise DamagedFile(f"no header ({len(data)} bytes, starts {data[:8]!r})")
    version, size = struct.unpack_from("<IQ", data, 8)
    if version not in (1, 2, 3):
        raise DamagedFile(f"format version {version}")
    payload = data[HEADER_SIZE:]
    if len(payload) != size:
        raise DamagedFile(f"payload {len(payload)} bytes, header says {size}")
    if hashlib.sha256(payload).digest() != data[20:HEADER_SIZE]:
        raise DamagedFile("checksum mismatch")
    _, count = struct.unpack_from("<QI", payload, 0)
    off = 12
    out = []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", payload, off)
        type_url = payload[off + 4:off + 4 + n].decode()
        off += 4 + n
        (n,) = struct.unpack_from("<I", payload, off)
        name = payload[off + 4:off + 4 + n].decode()
        off += 4 + n
        if version == 3:
            (n,) = struct.unpack_from("<I", payload, off)
            off += 4 + n  # the resource's version
        (n,) = struct.unpack_from("<Q", payload, off)
        out.append((type_url, name, payload[off + 8:off + 8 + n]))
        off += 8 + n
    if version >= 2:
        (n,) = struct.unpack_from("<I", payload, off)
        off += 4 + n  # rollout policies
    if off != len(payload):
        raise DamagedFile(f"{len(payload) - off} trailing bytes")
    return out
