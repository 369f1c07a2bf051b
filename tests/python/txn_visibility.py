"""txn_visibility.py drives a confluent-kafka-python (librdkafka)
transactional producer and read_committed / read_uncommitted consumers for
kiggy's transactions suite (tests/transactions, TestTxnVisibilityPython,
which runs it against kiggy and Kafka and checks its output).

    python3 txn_visibility.py BOOTSTRAP TOPIC TRANSACTIONAL_ID

On TOPIC (one partition, empty) it writes transaction A (A1..A5) and aborts
it, then transaction B (B1..B3) and commits it, each in two flushed parts;
after each part it lists the partition's read_committed (LSO) and
read_uncommitted (high watermark) end offsets, and after each end it waits
(up to 10 s) until the two agree. Then a plain producer writes a sentinel
record, and a read_committed and a read_uncommitted consumer read from the
start up to it. It prints one JSON object:

    {"txns": [{"name": "A", "commit": false, "parts": [{"first": F, "last": L,
               "lso": X, "hw": Y}, ...], "after": {"lso": X, "hw": Y}}, ...],
     "read_committed": [[VALUE, OFFSET], ...], "read_uncommitted": [...]}

It exits 1 with a message on stderr when a client call fails.
"""

import json
import sys
import time
import uuid

from confluent_kafka import (OFFSET_BEGINNING, Consumer, IsolationLevel,
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, OffsetSpec


def main():
    bootstrap, topic, txn_id = sys.argv[1:4]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)

    def ends():
        out = {}
        for key, level in (("lso", IsolationLevel.READ_COMMITTED), ("hw", IsolationLevel.READ_UNCOMMITTED)):
            fs = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level, request_timeout=30)
            out[key] = fs[tp].result().offset
        return out

    prod = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                     "transaction.timeout.ms": 60000, "linger.ms": 0})
    prod.init_transactions(30)

    txns = []
    for name, n, commit in (("A", 5, False), ("B", 3, True)):
        prod.begin_transaction()
        vals = [f"{name}{i}" for i in range(1, n + 1)]
        parts = []
        for part in (vals[:2], vals[2:]):
            offsets = []

            def delivered(err, msg, offsets=offsets):
                if err is not None:
                    raise KafkaException(err)
                offsets.append(msg.offset())

            for v in part:
                prod.produce(topic, value=v.encode(), partition=0, on_delivery=delivered)
            if prod.flush(30) != 0:
                raise SystemExit(f"txn {name}: records not delivered in 30 s")
            parts.append({"first": min(offsets), "last": max(offsets), **ends()})
        if commit:
            prod.commit_transaction(30)
        else:
            prod.abort_transaction(30)
        deadline = time.monotonic() + 10
        after = ends()
        while (after["lso"] != after["hw"] or after["hw"] <= parts[-1]["last"] + 1) and time.monotonic() < deadline:
            time.sleep(0.02)
            after = ends()
        txns.append({"name": name, "commit": commit, "parts": parts, "after": after})

    sentinel = "sentinel-" + uuid.uuid4().hex
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    plain.produce(topic, value=sentinel.encode(), partition=0)
    if plain.flush(30) != 0:
        raise SystemExit("sentinel not delivered in 30 s")

    def consume(level):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txnvis-" + uuid.uuid4().hex,
                      "isolation.level": level, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                raise KafkaException(m.error())
            v = (m.value() or b"").decode()
            if v == sentinel:
                c.close()
                return got
            got.append([v, m.offset()])
        raise SystemExit(f"{level}: no sentinel within 60 s; read {got}")

    print(json.dumps({"txns": txns, "read_committed": consume("read_committed"),
                      "read_uncommitted": consume("read_uncommitted")}), flush=True)


if __name__ == "__main__":
    main()
