#!/usr/bin/env python3
"""Seed corpora for the fuzz targets from the simulator's own pcaps (raw IPv4, linktype 101).

    lasthop run examples/snoop.toml --pcap --set flows.bulk.bytes=60000 --set links.wavelan.error.ber=2e-5 --out P
    python3 fuzz/seeds/from_pcaps.py P/wavelan-bs.pcap

writes fuzz/corpus/wire/ (single packets) and, for each agent target, a few files that replay the capture in
the agent driver's format (`fuzz/src/lib.rs`: configuration bytes, then op 5 = raw packet with a u16 length,
op 6 = advance the clock by a u16 number of ms). `cargo fuzz cmin` keeps the corpora small afterwards.
"""
import hashlib
import os
import struct
import sys

FUZZ = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MH = bytes([10, 1, 0, 1])
# Configuration bytes each agent target reads before its ops (see `build` in fuzz/src/lib.rs).
PREFIX = {
    "snoop": bytes([8, 4, 50]),
    "eln": bytes([0]),
    "nack": b"",
    "chain": bytes([8, 4, 50, 2]),
    "handoff": bytes([12, 48, 0, 8, 4, 50, 2]),
}


def packets(path):
    d = open(path, "rb").read()
    magic, _, _, _, _, _, linktype = struct.unpack("<IHHiIII", d[:24])
    assert linktype == 101, "raw IPv4 pcaps only"
    scale = 1e-9 if magic == 0xA1B23C4D else 1e-6
    at = 24
    while at + 16 <= len(d):
        sec, frac, incl, _ = struct.unpack("<IIII", d[at : at + 16])
        yield sec + frac * scale, d[at + 16 : at + 16 + incl]
        at += 16 + incl


def save(target, data):
    out = os.path.join(FUZZ, "corpus", target)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def main():
    pkts = [p for path in sys.argv[1:] for p in packets(path)]
    for _, p in pkts[:: max(1, len(pkts) // 24)]:
        save("wire", p)
    # Replays of consecutive slices of the capture, with the capture's own timing.
    for start in (0, len(pkts) // 2):
        chunk = pkts[start : start + 8]
        ops = bytearray()
        last = chunk[0][0]
        for t, p in chunk:
            ms = int((t - last) * 1000)
            if ms > 0:
                ops += bytes([6]) + struct.pack(">H", min(ms, 0xFFFF))
                last = t
            to_mobile = p[16:20] == MH
            ops += bytes([0x85 if to_mobile else 5]) + struct.pack(">H", len(p)) + p
        for target, prefix in PREFIX.items():
            save(target, prefix + bytes(ops))


if __name__ == "__main__":
    main()
