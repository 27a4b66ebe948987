#!/usr/bin/python3
"""What one peer's control plane sends, from a packet capture: bytes per second by OpenDHT
message kind (request or reply, and which request) and by DHT record kind (progress, donors,
matchmaking, ...), the rest by transport (TCP: rounds, state, handshakes).

Capture on a peer's network namespace while a swarm runs (bench/bench_communication keeps its
namespaces, named dlbc<pid>-h<host>, for the length of a mode; host 0 is the monitor):

    ip netns exec dlbc12345-h2 timeout 60 tcpdump -i eth0 -s 0 -w /tmp/peer.pcap
    bench/dht_traffic.py /tmp/peer.pcap 10.216.0.3

Needs python3-msgpack (Debian) to read OpenDHT's messages; counts IP bytes (headers included,
not the 14-byte Ethernet header). Classic pcap files (tcpdump -w), Ethernet or Linux cooked.
"""
import collections
import re
import struct
import sys

import msgpack

RECORD_KEY = re.compile(rb"dedloc/")


def record_kinds(payload):
    """The kinds of the signed records in a packet: each carries its key "dedloc/<run>/<kind>..."
    as a CBOR text string (core/net/DhtNode.h), whose length prefix bounds it."""
    kinds = []
    for m in RECORD_KEY.finditer(payload):
        i = m.start()
        if i >= 2 and payload[i - 2] == 0x78:  # text of 24-255 bytes: 0x78, length
            length = payload[i - 1]
        elif i >= 1 and 0x60 <= payload[i - 1] < 0x78:  # text of under 24 bytes
            length = payload[i - 1] - 0x60
        else:
            continue
        parts = payload[i:i + length].split(b"/")
        if len(parts) >= 3:
            kinds.append(parts[2].decode(errors="replace"))
    return kinds


def packets(path):
    """Yields (time, source address, destination address, protocol, IP bytes, UDP payload or b'')."""
    with open(path, "rb") as f:
        header = f.read(24)
        link = struct.unpack("<I", header[20:24])[0]
        offset = 14 if link == 1 else 16
        while True:
            record = f.read(16)
            if len(record) < 16:
                return
            seconds, micros, captured, _original = struct.unpack("<IIII", record)
            frame = f.read(captured)
            ip = frame[offset:]
            if len(ip) < 20 or ip[0] >> 4 != 4:
                continue
            length = struct.unpack(">H", ip[2:4])[0]
            ihl = (ip[0] & 15) * 4
            source = ".".join(map(str, ip[12:16]))
            destination = ".".join(map(str, ip[16:20]))
            payload = ip[ihl + 8:] if ip[9] == 17 else b""
            yield seconds + micros / 1e6, source, destination, ip[9], length, payload


def message_kind(payload, source, destination, queries):
    """'request get', 'reply get +values', ... for an OpenDHT message; None if it is not one.
    A reply is matched to its request by the transaction id and the two addresses."""
    try:
        m = msgpack.unpackb(payload, raw=True, strict_map_key=False)
    except Exception:  # not msgpack: not OpenDHT
        return None
    if not isinstance(m, dict):
        return None
    tid = m.get(b"t")
    if m.get(b"y") == b"q":
        kind = m.get(b"q", b"?").decode(errors="replace")
        queries[(source, destination, tid)] = kind
        return "request " + kind
    reply = m.get(b"r")
    asked = queries.get((destination, source, tid), "?")
    values = isinstance(reply, dict) and bool(reply.get(b"values"))
    fields = isinstance(reply, dict) and bool(reply.get(b"fields"))
    return ("reply " if m.get(b"y") == b"r" else "error ") + asked + (" +values" if values else "") \
        + (" +fields" if fields else "")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, me = sys.argv[1], sys.argv[2]
    queries = {}  # (requester, asked, transaction id) -> request kind; one interface sees both ways
    by_kind, count = collections.Counter(), collections.Counter()
    by_record, values = collections.Counter(), collections.Counter()
    first = last = None
    for time, source, destination, protocol, length, payload in packets(path):
        first = time if first is None else first
        last = time
        if protocol == 17:
            kind = message_kind(payload, source, destination, queries) or "udp (other)"
        else:
            kind = "tcp" if protocol == 6 else "ip protocol %d" % protocol
        if source != me:
            continue
        by_kind[kind] += length
        count[kind] += 1
        kinds = record_kinds(payload)
        for k in kinds:
            by_record[k] += length / len(kinds)
            values[k] += 1
    seconds = max(1e-9, (last or 0) - (first or 0))
    total = sum(by_kind.values())
    print("%.1f s captured; %s sent %.2f kB/s" % (seconds, me, total / seconds / 1e3))
    for kind, n in by_kind.most_common():
        print("  %-34s %7.2f kB/s  %6.2f packets/s  %5.0f B each" % (kind, n / seconds / 1e3, count[kind] / seconds,
                                                                   n / count[kind]))
    print("by DHT record kind (packets carrying records of that kind):")
    for kind, n in by_record.most_common():
        print("  %-34s %7.2f kB/s  %6.2f records/s" % (kind, n / seconds / 1e3, values[kind] / seconds))


if __name__ == "__main__":
    main()
