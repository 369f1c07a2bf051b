#!/usr/bin/env python3
"""Read every message of one Iggy partition with the official client
(apache-iggy, which wraps the Rust SDK) and print them as JSON lines:
offset, payload (hex), origin_timestamp (µs) and user headers as
[key kind, key, value kind, value] with bytes in hex.

Usage: readback.py HOST:PORT STREAM TOPIC PARTITION
Env: IGGY_USERNAME / IGGY_PASSWORD (default iggy/iggy).
Exit 2 when apache_iggy is missing.
"""

import asyncio
import json
import os
import sys

from iggy_exit import hard_exit

try:
    import apache_iggy as ig
except ImportError as e:
    print(f"readback: apache_iggy not importable: {e}", file=sys.stderr)
    sys.exit(2)


def enc(v):
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return v


async def main(addr, stream, topic, partition):
    client = ig.IggyClient(addr)
    await client.connect()
    await client.login_user(os.environ.get("IGGY_USERNAME", "iggy"), os.environ.get("IGGY_PASSWORD", "iggy"))
    consumer = ig.Consumer.Single("kiggy-readback")
    offset = 0
    while True:
        got = await client.poll_messages(stream, topic, consumer=consumer,
                                         polling_strategy=ig.PollingStrategy.Offset(offset),
                                         count=500, auto_commit=False, partition_id=partition)
        if not got:
            return
        for m in got:
            headers = []
            for k, v in (m.user_headers() or {}).items():
                headers.append([type(k).__name__, enc(k.value), type(v).__name__, enc(v.value)])
            print(json.dumps({"offset": m.offset(), "payload": m.payload().hex(),
                              "origin_timestamp": m.origin_timestamp(), "headers": headers}))
            offset = m.offset() + 1


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
    hard_exit(0)
