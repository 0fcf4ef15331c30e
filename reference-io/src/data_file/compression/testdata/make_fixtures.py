"""Regenerates the real-Lance fixtures of the decompression kernels (run with pylance 14.0.2):

    /work/venv/bin/python reference-io/src/data_file/compression/testdata/make_fixtures.py

It writes Lance 2.2 files with pylance's LanceFileWriter, finds each page's mini-block chunks
(page buffer 0: u32 chunk metadata words, low 4 bits log2 of the value count, high bits
bytes / 8 - 1; page buffer 1: the chunks, each a u16 value count, a u16 definition-level size
when the page has definition levels, one u32 size per value buffer, padding to 8, then the
definition levels and the value buffers, each padded to 8), and copies out the bytes that a
kernel receives, with the values pylance's LanceFileReader reads for them. fixtures.json lists
them; the `.in` files are kernel inputs, the `.out` files the expected little-endian values
(for FSST, a JSON list of the strings). The FSST fixture differs from run to run: Lance samples
the strings it builds its symbol table from with an OS-seeded generator.
"""

import json
import os
import re
import struct
import tempfile

import numpy as np
import pyarrow as pa
from lance.file import LanceFileReader, LanceFileWriter

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, table):
    with LanceFileWriter(path, table.schema, version="2.2") as w:
        w.write_batch(table)
    reader = LanceFileReader(path)
    return reader.metadata(), reader.read_all().to_table()


def chunks(data, page):
    """Yields (first row, value count, definition bytes or None, [value buffers]) per chunk."""
    enc = page.encoding
    assert "MiniBlockLayout" in enc, enc[:200]
    has_def = re.search(r"def_compression: Some", enc) is not None
    num_buffers = int(re.search(r"num_buffers: (\d+)", enc).group(1))
    num_items = int(re.search(r"num_items: (\d+)", enc).group(1))
    assert "has_large_chunk: true" in enc
    (meta_pos, meta_size), (chunk_pos, _) = [(b.position, b.size) for b in page.buffers[:2]]
    words = struct.unpack_from(f"<{meta_size // 4}I", data, meta_pos)
    pos, row = chunk_pos, 0
    for i, word in enumerate(words):
        size = ((word >> 4) + 1) * 8
        count = (1 << (word & 15)) if i + 1 < len(words) else num_items - row
        chunk = data[pos : pos + size]
        off = 2
        def_size = None
        if has_def:
            (def_size,) = struct.unpack_from("<H", chunk, off)
            off += 2
        sizes = struct.unpack_from(f"<{num_buffers}I", chunk, off)
        off += 4 * num_buffers
        off += -off % 8
        def_bytes = None
        if has_def:
            def_bytes = chunk[off : off + def_size]
            off += def_size
            off += -off % 8
        bufs = []
        for s in sizes:
            bufs.append(chunk[off : off + s])
            off += s
            off += -off % 8
        yield row, count, def_bytes, bufs
        pos += size
        row += count


def main():
    rng = np.random.default_rng(20261203)
    fixtures = []

    def save(name, data):
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)

    def numeric(name, column, np_type, bits, table_col, n):
        """Fixture of the first full chunk of an InlineBitpacking column."""
        meta, table = tables[n]
        page = meta.columns[column].pages[0]
        assert f"uncompressed_bits_per_value: {bits}" in page.encoding
        assert "InlineBitpacking" in page.encoding
        row, count, _, bufs = next(chunks(data_of[n], page))
        values = table.column(table_col).to_numpy()[row : row + count].astype(np_type)
        save(f"{name}.in", bytes(bufs[0]))
        save(f"{name}.out", values.astype(values.dtype.newbyteorder("<")).tobytes())
        fixtures.append(
            dict(name=name, kernel="inline", uncompressed_bits=bits, num_values=count,
                 width=bufs[0][0], source=f"{n}-row file, column {table_col!r}, chunk 0")
        )

    tables, data_of = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (4100, 5000):
            t = pa.table({
                "u8": pa.array(rng.integers(0, 60, n), type=pa.uint8()),
                "i16": pa.array(rng.integers(0, 3000, n), type=pa.int16()),
                "i32": pa.array(rng.integers(0, 1000, n), type=pa.int32()),
                "i64": pa.array(rng.integers(0, 4000, n), type=pa.int64()),
                "nullable": pa.array([None if i % 3 == 0 else i for i in range(n)], type=pa.int32()),
                "s": pa.array(["".join(chr(97 + x) for x in rng.integers(0, 26, rng.integers(0, 24)))
                               for _ in range(n)]),
            })
            path = os.path.join(tmp, f"{n}.lance")
            tables[n] = write(path, t)
            with open(path, "rb") as f:
                data_of[n] = f.read()

        numeric("inline_u8", 0, np.uint8, 8, "u8", 4100)
        numeric("inline_u16", 1, np.uint16, 16, "i16", 4100)
        numeric("inline_u32", 2, np.uint32, 32, "i32", 4100)
        numeric("inline_u64", 3, np.uint64, 64, "i64", 4100)

        # Definition levels of the nullable column: 0 = valid, 1 = null, u16 packed with 1 bit.
        for n, which, form in ((4100, 0, "full"), (4100, -1, "raw_tail"), (5000, -1, "padded_tail")):
            meta, table = tables[n]
            page = meta.columns[4].pages[0]
            assert "OutOfLineBitpacking" in page.encoding and "bits_per_value: 1" in page.encoding
            row, count, def_bytes, _ = list(chunks(data_of[n], page))[which]
            valid = table.column("nullable").is_valid().to_numpy(zero_copy_only=False)[row : row + count]
            levels = np.where(valid, 0, 1).astype("<u2")
            name = f"out_of_line_def_{form}"
            save(f"{name}.in", bytes(def_bytes))
            save(f"{name}.out", levels.tobytes())
            fixtures.append(dict(name=name, kernel="out_of_line", uncompressed_bits=16,
                                 compressed_bits=1, num_values=count,
                                 source=f"{n}-row file, nullable int32 definition levels, chunk {which}"))

        # FSST: the page's symbol table and its smallest chunk (a legacy binary mini-block
        # buffer: n + 1 u32 chunk-relative offsets, then the compressed bytes).
        meta, table = tables[5000]
        page = meta.columns[5].pages[0]
        assert "Fsst" in page.encoding
        all_chunks = list(chunks(data_of[5000], page))
        row, count, _, bufs = min(all_chunks, key=lambda c: len(c[3][0]))
        # The symbol table as the page encoding's protobuf carries it: parse the Rust debug
        # string of the bytes literal.
        lit = re.search(r'symbol_table: b"((?:[^"\\]|\\.)*)"', page.encoding).group(1)
        table_bytes = parse_rust_bytes(lit)
        assert len(table_bytes) == 2312, len(table_bytes)
        save("fsst_symbol_table.in", table_bytes)
        save("fsst_chunk.in", bytes(bufs[0]))
        strings = table.column("s").to_pylist()[row : row + count]
        save("fsst_chunk.out", json.dumps(strings).encode())
        fixtures.append(dict(name="fsst_chunk", kernel="fsst", num_values=count,
                             source=f"5000-row file, utf8 column, chunk starting at row {row}"))

        # Byte-stream-split: asked for with field metadata, and wrapped in General{zstd} (each
        # chunk's values buffer is a zstd frame, possibly behind an 8-byte length prefix). The
        # fixture is the last (partial) chunk after zstd decompression, as the kernel gets it.
        n = 1100
        meta = {"lance-encoding:bss": "on", "lance-encoding:compression": "zstd"}
        schema = pa.schema([pa.field("f32", pa.float32(), metadata=meta),
                            pa.field("f64", pa.float64(), metadata=meta)])
        t = pa.table({"f32": pa.array(rng.normal(size=n).astype(np.float32)),
                      "f64": pa.array(rng.normal(size=n))}, schema=schema)
        path = os.path.join(tmp, "bss.lance")
        bss_meta, bss_table = write(path, t)
        with open(path, "rb") as f:
            bss_data = f.read()
        for column, name, bits in ((0, "f32", 32), (1, "f64", 64)):
            page = bss_meta.columns[column].pages[0]
            assert "ByteStreamSplit" in page.encoding and "Zstd" in page.encoding
            row, count, _, bufs = list(chunks(bss_data, page))[-1]
            frame = bytes(bufs[0])
            if frame[:4] != b"\x28\xb5\x2f\xfd":
                assert struct.unpack_from("<Q", frame)[0] == count * bits // 8
                frame = frame[8:]
            split = pa.decompress(frame, decompressed_size=count * bits // 8, codec="zstd",
                                  asbytes=True)
            values = bss_table.column(name).to_numpy()[row : row + count]
            save(f"byte_stream_split_{name}.in", split)
            save(f"byte_stream_split_{name}.out", values.astype(values.dtype.newbyteorder("<")).tobytes())
            fixtures.append(dict(name=f"byte_stream_split_{name}", kernel="byte_stream_split",
                                 uncompressed_bits=bits, num_values=count,
                                 source=f"{n}-row file, {name} column (bss on, zstd), last chunk"))

    with open(os.path.join(HERE, "fixtures.json"), "w") as f:
        json.dump(fixtures, f, indent=1)
        f.write("\n")


def parse_rust_bytes(lit):
    out = bytearray()
    i = 0
    while i < len(lit):
        c = lit[i]
        if c != "\\":
            out.append(ord(c))
            i += 1
            continue
        e = lit[i + 1]
        if e == "x":
            out.append(int(lit[i + 2 : i + 4], 16))
            i += 4
        else:
            out.append({"0": 0, "n": 10, "r": 13, "t": 9, "\\": 92, '"': 34, "'": 39}[e])
            i += 2
    return bytes(out)


if __name__ == "__main__":
    main()
