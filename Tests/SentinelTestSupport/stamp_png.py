#!/usr/bin/python3
"""Stamps a screenshot with the page it shows: a PNG tEXt chunk "page-sha256" holding the SHA-256 of PAGE's bytes.

usage: stamp_png.py SCREENSHOT.png PAGE

`make screenshot` stamps docs/dashboard.png and docs/zone-editor.png with the page files they were taken of; a test
(DocumentationTests) reads the stamp back and fails when a page changed since its picture was taken. `stamp` writes
any tEXt chunk: the dashboard's probe writes "Description", what the picture shows, which the docs' alt text must say.
"""
import hashlib
import struct
import sys
import zlib


def stamp(png, key, value):
    """Writes the tEXt chunk `key` into the PNG file `png` (replacing an earlier one), just before its end."""
    data = open(png, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{png}: not a PNG"
    chunks, at = [], 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        chunk = data[at:at + 12 + length]
        at += 12 + length
        if kind == b"tEXt" and chunk[8:8 + length].startswith(key.encode("latin-1") + b"\0"):
            continue
        chunks.append((kind, chunk))
    text = key.encode("latin-1") + b"\0" + value.encode("latin-1")
    chunk = struct.pack(">I", len(text)) + b"tEXt" + text + struct.pack(">I", zlib.crc32(b"tEXt" + text) & 0xFFFFFFFF)
    body = b"".join(c for k, c in chunks if k != b"IEND") + chunk + b"".join(c for k, c in chunks if k == b"IEND")
    open(png, "wb").write(data[:8] + body)


def main():
    png, page = sys.argv[1], sys.argv[2]
    stamp(png, "page-sha256", hashlib.sha256(open(page, "rb").read()).hexdigest())


if __name__ == "__main__":
    main()
