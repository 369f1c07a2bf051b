"""confluent_client.py drives confluent-kafka-python (librdkafka) for kiggy's
ecosystem tests (tests/ecosystem, which runs it and checks what it did with
franz-go). Every command prints one JSON object on stdout; see
tests/python/README.md for the commands, shared with aiokafka_client.py and
tests/node/kafkajs_client.js.

    python3 confluent_client.py BOOTSTRAP COMMAND ARGS...
"""

import json
import os
import sys
import threading
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def out(obj):
    print(json.dumps(obj), flush=True)


def value_of(codec, i):
    # Repetitive, so that every codec really compresses it.
    return (f"{codec} value {i} " * 12).encode()


def cmd_version(_bootstrap):
    out({"client": "confluent-kafka", "version": confluent_kafka.version(),
         "librdkafka": confluent_kafka.libversion()[0]})


def cmd_admin(bootstrap, keep, drop):
    a = AdminClient({"bootstrap.servers": bootstrap})
    fs = a.create_topics([
        NewTopic(keep, num_partitions=3, replication_factor=1, config={"retention.ms": "3600000"}),
        NewTopic(drop, num_partitions=1, replication_factor=1),
    ], operation_timeout=30)
    for f in fs.values():
        f.result(timeout=30)
    # A new topic can take a moment to reach every broker's metadata cache
    # (Kafka answers UNKNOWN_TOPIC_OR_PART until it has): retry a few times.
    parts = -1
    for _ in range(50):
        md = a.list_topics(timeout=30)
        if keep in md.topics and md.topics[keep].error is None:
            parts = len(md.topics[keep].partitions)
            break
        time.sleep(0.1)
    res = ConfigResource(ConfigResource.Type.TOPIC, keep)
    for attempt in range(50):
        try:
            cfg = a.describe_configs([res])[res].result(timeout=30)
            break
        except KafkaException as e:
            if attempt == 49 or e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
            time.sleep(0.1)
    retention = cfg["retention.ms"].value if "retention.ms" in cfg else None
    for f in a.delete_topics([drop], operation_timeout=30).values():
        f.result(timeout=30)
    # Deletion is asynchronous on Kafka: wait until the topic is not listed.
    gone = False
    for _ in range(100):
        if drop not in a.list_topics(timeout=30).topics:
            gone = True
            break
        time.sleep(0.1)
    out({"partitions": parts, "retention.ms": retention, "deleted": gone,
         "listed": keep in a.list_topics(timeout=30).topics})


def cmd_produce(bootstrap, topic, n):
    """Produces n records per codec, codec i to partition i."""
    n = int(n)
    sent = {}
    for part, codec in enumerate(CODECS):
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                      "linger.ms": 20, "acks": "all", "enable.idempotence": True})
        errors = []

        def report(err, _msg):
            if err is not None:
                errors.append(str(err))

        for i in range(n):
            p.produce(topic, key=f"{codec}-key-{i}".encode(), value=value_of(codec, i), partition=part,
                      headers=[("codec", codec.encode()), ("i", str(i).encode())], on_delivery=report)
        left = p.flush(30)
        if left or errors:
            raise SystemExit(f"{codec}: {left} undelivered, errors {errors[:3]}")
        sent[codec] = n
    out({"sent": sent})


def cmd_consume(bootstrap, topic, group, n, protocol="classic"):
    """Consumes n records in group (subscribe), commits, closes."""
    n = int(n)
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "group.protocol": protocol}
    if protocol == "classic":
        conf["session.timeout.ms"] = 10000
        conf["heartbeat.interval.ms"] = 1000
    c = Consumer(conf)
    c.subscribe([topic])
    got = []
    deadline = time.time() + float(os.environ.get("KIGGY_CONSUME_SECONDS", "45"))
    while len(got) < n and time.time() < deadline:
        for m in c.consume(num_messages=n - len(got), timeout=0.5):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(m.error())
            got.append(f"{m.partition()}/{m.offset()}/{m.key().decode()}")
    if got:
        c.commit(asynchronous=False)
    c.close()
    out({"records": got})


def cmd_member(bootstrap, topic, group, assignor=""):
    """Stays a member of group, consuming topic, until a line "stop" (or EOF)
    on stdin; then closes, leaving the group. Prints one JSON object a line:
    {"event": "assign"|"revoke"|"lost", "partitions": [...]} from the
    rebalance callbacks (incremental on the consumer protocol), {"event":
    "record", "record": "P/O/KEY"} once a record is committed, and
    {"event": "closed"} last. The group protocol is consumer (KIP-848):
    librdkafka then refuses the classic settings (session.timeout.ms,
    heartbeat.interval.ms, partition.assignment.strategy), which the
    coordinator owns. ASSIGNOR, when given, is group.remote.assignor (the
    server-side assignor asked for); unset, the coordinator chooses."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "group.protocol": "consumer"}
    if assignor:
        conf["group.remote.assignor"] = assignor
    stop = threading.Event()

    def read_stdin():
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        stop.set()

    threading.Thread(target=read_stdin, daemon=True).start()
    c = Consumer(conf)

    def event(name):
        def cb(_consumer, parts):
            out({"event": name, "partitions": sorted(p.partition for p in parts if p.topic == topic)})
        return cb

    c.subscribe([topic], on_assign=event("assign"), on_revoke=event("revoke"), on_lost=event("lost"))
    while not stop.is_set():
        # One record a poll, committed before the next poll: the rebalance
        # callbacks run inside a poll, so a partition is never revoked with
        # a record read from it but not committed.
        for m in c.consume(num_messages=1, timeout=0.2):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(m.error())
            c.commit(message=m, asynchronous=False)
            out({"event": "record", "record": f"{m.partition()}/{m.offset()}/{m.key().decode()}"})
    c.close()
    out({"event": "closed"})


def main():
    bootstrap, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    {"version": cmd_version, "admin": cmd_admin, "produce": cmd_produce, "consume": cmd_consume,
     "member": cmd_member}[cmd](bootstrap, *args)


if __name__ == "__main__":
    main()
