#!/usr/bin/env python3
"""Drive an Iggy server with the official client (the apache-iggy package,
which wraps the Rust SDK) and check every answer.

kiggy runs it against its test server, bridge/iggy/iggytest, to check that
iggytest speaks the protocol as the real server does (fidelity_test.go). It
can equally be pointed at a real iggy-server.

Usage: fidelity.py [HOST:PORT]   (or env IGGY_ADDR; default 127.0.0.1:8090)
Env: IGGY_USERNAME / IGGY_PASSWORD (default iggy/iggy).
Exit status: 0 when every check passes, 1 on the first mismatch, 2 when the
apache_iggy package is missing.
"""

import asyncio
import datetime
import os
import struct
import sys
import time
import uuid

from iggy_exit import hard_exit

try:
    import apache_iggy as ig
except ImportError as e:  # the Go test skips on this exit code
    print(f"fidelity: apache_iggy not importable: {e}", file=sys.stderr)
    sys.exit(2)


class Mismatch(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Mismatch(what)
    print(f"ok   {what}")


def identifier(value):
    """WireIdentifier bytes (docs/design/iggy-protocol.md §2.3)."""
    if isinstance(value, int):
        return bytes([1, 4]) + struct.pack("<I", value)
    raw = value.encode()
    return bytes([2, len(raw)]) + raw


def consumer(kind, value):
    return bytes([kind]) + identifier(value)


async def expect_error(coro, what):
    try:
        await coro
    except Exception as e:  # the SDK raises RuntimeError subclasses
        print(f"ok   {what} (raised: {str(e)[:80]})")
        return
    raise Mismatch(f"{what}: no error raised")


async def main(addr, username, password):
    client = ig.IggyClient(addr)
    await client.connect()
    await client.ping()
    check(True, "connect and ping before login")
    await client.login_user(username, password)
    check(True, f"login_user {username}")
    await client.ping()

    stream = f"fid-{uuid.uuid4().hex[:8]}"
    topic = "events"
    await client.create_stream(stream)
    s = await client.get_stream(stream)
    check(s is not None and s.name == stream, "create_stream / get_stream by name")
    check(await client.get_stream(f"missing-{stream}") is None, "get_stream of a missing stream is None")
    await expect_error(client.create_stream(stream), "duplicate create_stream fails")
    streams = await client.get_streams()
    check(any(x.name == stream for x in streams), "get_streams lists the stream")

    try:
        await client.create_topic(stream, topic, 2,
                                  message_expiry=ig.IggyExpiry.ExpireDuration(datetime.timedelta(hours=1)))
    except RuntimeError as e:
        if "Unsupported option key" not in str(e):
            raise
        # apache-iggy 0.9.0 always sends the options durability and
        # consumer_offset_durability; servers built before those keys existed
        # (e.g. apache/iggy cc269ef70ef2) refuse them with 4041. Create the
        # topic with a raw CreateTopic (302) carrying only message_expiry.
        print(f"note server refuses the client's create_topic options ({e}); using a raw CreateTopic")
        body = identifier(stream) + struct.pack("<I", 2) + bytes([len(topic)]) + topic.encode()
        key = b"message_expiry"
        body += bytes([2]) + struct.pack("<I", len(key)) + key + bytes([12]) + struct.pack("<IQ", 8, 3_600_000_000)
        await client.send_binary_request(302, body)
    t = await client.get_topic(stream, topic)
    check(t is not None and t.name == topic and t.partitions_count == 2, "create_topic / get_topic: 2 partitions")
    topics = await client.get_topics(stream)
    check([x.name for x in topics] == [topic], "get_topics lists the topic")
    dup = identifier(stream) + struct.pack("<I", 1) + bytes([len(topic)]) + topic.encode()
    await expect_error(client.send_binary_request(302, dup), "duplicate create_topic fails")
    await client.create_partitions(stream, topic, 1)
    t = await client.get_topic(stream, topic)
    check(t.partitions_count == 3, "create_partitions adds one partition")

    headers = {
        ig.HeaderKey.String("kafka.key"): ig.HeaderValue.Raw(b"k1"),
        ig.HeaderKey.String("trace"): ig.HeaderValue.String("abc"),
        ig.HeaderKey.String("n"): ig.HeaderValue.Int64(-7),
    }
    msgs = [ig.SendMessage(f"payload-{i}".encode(), user_headers=headers if i % 2 == 0 else None)
            for i in range(5)]
    before = time.time_ns() // 1000
    res = await client.send_messages(stream, topic, 1, msgs)
    check(len(res.confirmations) == 1 and res.confirmations[0].base_offset == 0
          and res.confirmations[0].partition_id == 1, "send_messages to partition 1: base offset 0")
    res = await client.send_messages(stream, topic, ig.Partitioning.partition_id(1),
                                     [ig.SendMessage(b"tail-a"), ig.SendMessage(b"tail-b")])
    check(res.confirmations[0].base_offset == 5, "second send_messages: base offset 5")

    single = ig.Consumer.Single("fidelity")
    got = await client.poll_messages(stream, topic, consumer=single, polling_strategy=ig.PollingStrategy.Offset(0),
                                     count=100, auto_commit=False, partition_id=1)
    check([m.offset() for m in got] == list(range(7)), "poll Offset(0) returns offsets 0..6")
    check([m.payload() for m in got[:5]] == [f"payload-{i}".encode() for i in range(5)], "payloads round-trip")
    check(all(m.partition_id() == 1 for m in got), "polled messages carry partition 1")
    h0 = got[0].user_headers()
    check(h0 is not None and h0.get(ig.HeaderKey.String("kafka.key")) == ig.HeaderValue.Raw(b"k1")
          and h0.get(ig.HeaderKey.String("trace")) == ig.HeaderValue.String("abc")
          and h0.get(ig.HeaderKey.String("n")) == ig.HeaderValue.Int64(-7), "user headers round-trip")
    check(not got[1].user_headers(), "a message without headers has none")
    check(all(m.origin_timestamp() >= before - 5_000_000 for m in got), "origin timestamps are µs near now")
    check(all(m.timestamp() >= m.origin_timestamp() - 5_000_000 for m in got), "server timestamps are µs")
    check(got[0].timestamp() == got[4].timestamp() and got[5].timestamp() > got[0].timestamp(),
          "one base timestamp per send")

    got = await client.poll_messages(stream, topic, consumer=single, polling_strategy=ig.PollingStrategy.Offset(3),
                                     count=2, auto_commit=False, partition_id=1)
    check([m.offset() for m in got] == [3, 4], "poll Offset(3) count 2 returns a sliced record [3, 4]")
    got = await client.poll_messages(stream, topic, consumer=single, polling_strategy=ig.PollingStrategy.Last(),
                                     count=2, auto_commit=False, partition_id=1)
    check([m.offset() for m in got] == [5, 6], "poll Last count 2 returns [5, 6]")
    got = await client.poll_messages(stream, topic, consumer=single, polling_strategy=ig.PollingStrategy.First(),
                                     count=1, auto_commit=False, partition_id=1)
    check([m.offset() for m in got] == [0], "poll First count 1 returns [0]")
    all_msgs = await client.poll_messages(stream, topic, consumer=single,
                                          polling_strategy=ig.PollingStrategy.Offset(0), count=100,
                                          auto_commit=False, partition_id=1)
    ts = all_msgs[5].timestamp()
    got = await client.poll_messages(stream, topic, consumer=single, polling_strategy=ig.PollingStrategy.Timestamp(ts),
                                     count=1, auto_commit=False, partition_id=1)
    check([m.offset() for m in got] == [5], "poll Timestamp(base timestamp of 2nd send) returns [5]")
    got = await client.poll_messages(stream, topic, consumer=single, polling_strategy=ig.PollingStrategy.Offset(7),
                                     count=10, auto_commit=False, partition_id=1)
    check(got == [], "poll at the end returns nothing")
    got = await client.poll_messages(stream, topic, consumer=single, polling_strategy=ig.PollingStrategy.Offset(0),
                                     count=10, auto_commit=False, partition_id=0)
    check(got == [], "poll of the empty partition 0 returns nothing")

    # Next with auto-commit: stores the last returned offset under the consumer.
    nxt = ig.Consumer.Single("next-reader")
    got = await client.poll_messages(stream, topic, consumer=nxt, polling_strategy=ig.PollingStrategy.Next(),
                                     count=3, auto_commit=True, partition_id=1)
    check([m.offset() for m in got] == [0, 1, 2], "poll Next with auto_commit returns [0, 1, 2]")
    got = await client.poll_messages(stream, topic, consumer=nxt, polling_strategy=ig.PollingStrategy.Next(),
                                     count=3, auto_commit=True, partition_id=1)
    check([m.offset() for m in got] == [3, 4, 5], "second poll Next continues at 3")

    # Consumer offsets through the SDK's raw binary path (the SDK builds the
    # VSR header, session and request number; we build the body per §3.9).
    body = consumer(1, "kafka.cg.fidelity") + identifier(stream) + identifier(topic) + b"\x01" + struct.pack("<I", 1)
    raw = await client.send_binary_request(121, body + struct.pack("<Q", 4) + b"\x01")
    check(True, f"store_consumer_offset (kind 1, named) accepted, reply {raw.hex() or 'empty'}")
    raw = await client.send_binary_request(120, body)
    check(len(raw) == 20 and struct.unpack("<IQQ", raw) == (1, 6, 4),
          "get_consumer_offset returns partition 1, current offset 6, stored 4")
    await expect_error(client.send_binary_request(121, body + struct.pack("<Q", 7) + b"\x01"),
                       "store_consumer_offset beyond current_offset is refused (InvalidOffset)")
    empty_body = consumer(1, "kafka.cg.fidelity") + identifier(stream) + identifier(topic) + b"\x01" + struct.pack("<I", 0)
    await expect_error(client.send_binary_request(121, empty_body + struct.pack("<Q", 0) + b"\x01"),
                       "store_consumer_offset on an empty partition is refused")
    raw = await client.send_binary_request(120, empty_body)
    check(raw == b"", "get_consumer_offset with nothing stored returns an empty body")

    # Consumer groups through the high-level consumer (create, join, sync,
    # poll with kind 2, store_offset).
    await client.create_consumer_group(stream, topic, "fid-group")
    grp = await client.get_consumer_group(stream, topic, "fid-group")
    check(grp is not None and grp.name == "fid-group" and grp.partitions_count == 3, "create/get_consumer_group")
    await client.join_consumer_group(stream, topic, "fid-group")
    grp = await client.get_consumer_group(stream, topic, "fid-group")
    check(grp.members_count == 1 and sorted(grp.members[0].partitions) == [0, 1, 2], "join: one member owns all")
    group = ig.Consumer.Group("fid-group")
    got = await client.poll_messages(stream, topic, consumer=group, polling_strategy=ig.PollingStrategy.Offset(0),
                                     count=2, auto_commit=True, partition_id=1)
    check([m.offset() for m in got] == [0, 1], "group poll with explicit partition")
    raw = await client.send_binary_request(120, consumer(2, "fid-group") + identifier(stream) + identifier(topic)
                                           + b"\x01" + struct.pack("<I", 1))
    check(len(raw) == 20 and struct.unpack("<IQQ", raw)[2] == 1, "group auto-commit stored offset 1")
    await client.leave_consumer_group(stream, topic, "fid-group")
    await expect_error(client.leave_consumer_group(stream, topic, "fid-group"), "leaving twice fails")
    groups = await client.get_consumer_groups(stream, topic)
    check([g.name for g in groups] == ["fid-group"], "get_consumer_groups")
    await client.delete_consumer_group(stream, topic, "fid-group")

    await client.delete_topic(stream, topic)
    check(await client.get_topic(stream, topic) is None, "delete_topic")
    await expect_error(client.delete_topic(stream, topic), "delete of a missing topic fails")
    await client.delete_stream(stream)
    check(await client.get_stream(stream) is None, "delete_stream")

    bad = ig.IggyClient(addr)
    await bad.connect()
    await expect_error(asyncio.wait_for(bad.login_user(username, password + "-wrong"), 10), "wrong password refused")
    print("fidelity: all checks passed")


if __name__ == "__main__":
    addr = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("IGGY_ADDR", "127.0.0.1:8090")
    code = 0
    try:
        asyncio.run(asyncio.wait_for(main(addr, os.environ.get("IGGY_USERNAME", "iggy"),
                                          os.environ.get("IGGY_PASSWORD", "iggy")), 120))
    except Mismatch as e:
        print(f"FAIL {e}", file=sys.stderr)
        code = 1
    except Exception as e:
        print(f"FAIL unexpected {type(e).__name__}: {e}", file=sys.stderr)
        code = 1
    hard_exit(code)
