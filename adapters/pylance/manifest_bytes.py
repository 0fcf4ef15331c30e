"""Editing one integer field of a Lance manifest file in place, for the adapter's hand-made
manifests: testee.py probes which reader flags a release knows (field 9), writer.py renumbers
the version of a create Lance can only make in several commits (field 3).

A manifest file ends with the Manifest message (a u32 length prefix, then the message) and a
16-byte footer: the u64 offset of that message, two u16 format versions and the magic "LANC".
The message is the last thing before the footer, so changing its length moves nothing the
footer or the index section point at. Every other byte of the file is kept."""

import struct


def _varint(b, i):
    value = shift = 0
    while True:
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def _encode_varint(value):
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def with_varint_field(manifest, number, value):
    """The manifest file's bytes with Manifest field `number` (a varint) set to `value`: the
    first occurrence is replaced where it stands, later ones are dropped, and the field is
    appended when the message has none."""
    if len(manifest) < 16 or manifest[-4:] != b"LANC":
        raise ValueError("no LANC footer")
    (pos,) = struct.unpack("<Q", manifest[-16:-8])
    (length,) = struct.unpack("<I", manifest[pos:pos + 4])
    if pos + 4 + length != len(manifest) - 16:
        raise ValueError("the manifest message is not the last thing before the footer")
    message = manifest[pos + 4:pos + 4 + length]
    field_bytes = _encode_varint(number << 3) + _encode_varint(value)
    out, i, placed = [], 0, False
    while i < len(message):
        begin = i
        key, i = _varint(message, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = _varint(message, i)
        elif wire == 2:
            n, i = _varint(message, i)
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        if field != number:
            out.append(message[begin:i])
        elif wire != 0:
            raise ValueError(f"field {number} is not a varint")
        elif not placed:
            out.append(field_bytes)
            placed = True
    if not placed:
        out.append(field_bytes)
    new = b"".join(out)
    return manifest[:pos] + struct.pack("<I", len(new)) + new + manifest[-16:]
