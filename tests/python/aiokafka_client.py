"""aiokafka_client.py drives aiokafka (asyncio, pure Python; snappy, lz4 and
zstd through cramjam) for kiggy's ecosystem tests (tests/ecosystem, which
runs it and checks what it did with franz-go). Every command prints one JSON
object on stdout; see tests/python/README.md for the commands, shared with
confluent_client.py and tests/node/kafkajs_client.js.

    python3 aiokafka_client.py BOOTSTRAP COMMAND ARGS...
"""

import asyncio
import json
import os
import sys
import time

import aiokafka
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def out(obj):
    print(json.dumps(obj), flush=True)


def value_of(codec, i):
    return (f"{codec} value {i} " * 12).encode()


async def cmd_version(_bootstrap):
    out({"client": "aiokafka", "version": aiokafka.__version__})


async def cmd_admin(bootstrap, keep, drop):
    a = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await a.start()
    try:
        await a.create_topics([
            NewTopic(keep, num_partitions=3, replication_factor=1, topic_configs={"retention.ms": "3600000"}),
            NewTopic(drop, num_partitions=1, replication_factor=1),
        ])
        # A new topic can take a moment to reach every broker's metadata
        # cache (Kafka answers UNKNOWN_TOPIC_OR_PARTITION, 3, until then).
        parts = -1
        for _ in range(50):
            desc = await a.describe_topics([keep])
            if desc and desc[0].get("error_code", 0) == 0:
                parts = len(desc[0]["partitions"])
                break
            await asyncio.sleep(0.1)
        retention = None
        for _ in range(50):
            cfgs = await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, keep)])
            unknown = False
            for resp in cfgs:
                for res in resp.resources:
                    # (error_code, error_message, type, name, config_entries)
                    unknown = unknown or res[0] == 3
                    for entry in res[4]:
                        if entry[0] == "retention.ms":
                            retention = entry[1]
            if not unknown:
                break
            await asyncio.sleep(0.1)
        await a.delete_topics([drop])
        gone = False
        for _ in range(100):
            if drop not in await a.list_topics():
                gone = True
                break
            await asyncio.sleep(0.1)
        listed = keep in await a.list_topics()
    finally:
        await a.close()
    out({"partitions": parts, "retention.ms": retention, "deleted": gone, "listed": listed})


async def cmd_produce(bootstrap, topic, n):
    n = int(n)
    sent = {}
    for part, codec in enumerate(CODECS):
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                             linger_ms=20, compression_type=None if codec == "none" else codec)
        await p.start()
        try:
            futs = [await p.send(topic, key=f"{codec}-key-{i}".encode(), value=value_of(codec, i), partition=part,
                                 headers=[("codec", codec.encode()), ("i", str(i).encode())])
                    for i in range(n)]
            await asyncio.gather(*futs)
        finally:
            await p.stop()
        sent[codec] = n
    out({"sent": sent})


async def cmd_consume(bootstrap, topic, group, n, protocol="classic"):
    if protocol != "classic":
        raise SystemExit("aiokafka has only the classic group protocol")
    n = int(n)
    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=1000)
    await c.start()
    got = []
    offsets = {}
    try:
        deadline = time.time() + float(os.environ.get("KIGGY_CONSUME_SECONDS", "45"))
        while len(got) < n and time.time() < deadline:
            batch = await c.getmany(timeout_ms=500, max_records=n - len(got))
            for tp, msgs in batch.items():
                for m in msgs:
                    got.append(f"{m.partition}/{m.offset}/{m.key.decode()}")
                    offsets[tp] = m.offset + 1
        if offsets:
            # Commit exactly what was handed out (getmany may have fetched more).
            await c.commit(offsets)
    finally:
        await c.stop()
    out({"records": got})


def main():
    bootstrap, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    fn = {"version": cmd_version, "admin": cmd_admin, "produce": cmd_produce, "consume": cmd_consume}[cmd]
    asyncio.run(fn(bootstrap, *args))


if __name__ == "__main__":
    main()
