package iggytest

import (
	"encoding/binary"
	"sort"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// appendStream appends a StreamResponse (§3.4) in dialect d.
func appendStream(b []byte, d proto.Dialect, s *stream) []byte {
	var msgs, size uint64
	for _, t := range s.topics {
		n, sz := t.messages()
		msgs += n
		size += sz
	}
	b = proto.AppendU32(b, s.id)
	b = proto.AppendU64(b, s.created)
	b = proto.AppendU32(b, uint32(len(s.topics)))
	b = proto.AppendU64(b, size)
	b = proto.AppendU64(b, msgs)
	b = proto.AppendName(b, s.name)
	b = proto.AppendU32(b, 0) // options
	if d == proto.Dialect012 {
		b = proto.AppendU32(b, 0) // §9: derived options
	}
	return b
}

// appendTopicHeader appends a TopicHeader (§3.5) in dialect d. 0.12 (§9)
// drops the message expiry, compression and size cap from the fixed fields:
// they are reported in the option blocks only.
func appendTopicHeader(b []byte, d proto.Dialect, t *topic) []byte {
	msgs, size := t.messages()
	b = proto.AppendU32(b, t.id)
	b = proto.AppendU64(b, t.created)
	b = proto.AppendU32(b, uint32(len(t.partitions)))
	if d != proto.Dialect012 {
		b = proto.AppendU64(b, t.expiry)
		b = append(b, t.compression)
		b = proto.AppendU64(b, t.maxSize)
	}
	b = proto.AppendU64(b, size)
	b = proto.AppendU64(b, msgs)
	b = proto.AppendName(b, t.name)
	b = proto.AppendU32(b, uint32(len(t.options)))
	b = append(b, t.options...)
	// Derived options: the server resolves every option the client left
	// out and reports it here; iggytest reports the flush options, and in
	// 0.12 the durability, expiry, size cap and compression.
	at := len(b)
	b = proto.AppendU32(b, 0)
	if d == proto.Dialect012 {
		if !t.explicit["durability"] {
			b = proto.AppendOptionString(b, "durability", "replicated")
		}
		if !t.explicit["message_expiry"] {
			b = proto.AppendOptionU64(b, "message_expiry", t.expiry)
		}
		if !t.explicit["max_topic_size"] {
			b = proto.AppendOptionU64(b, "max_topic_size", t.maxSize)
		}
		if !t.explicit["compression_algorithm"] {
			b = proto.AppendOptionString(b, "compression_algorithm", compressionName(t.compression))
		}
	} else if !t.explicit["enforce_fsync"] {
		b = proto.AppendOptionBool(b, "enforce_fsync", t.fsync)
	}
	if !t.explicit["messages_required_to_save"] {
		b = proto.AppendOptionU32(b, "messages_required_to_save", uint32(t.msgsToSave))
	}
	if !t.explicit["size_of_messages_required_to_save"] {
		b = proto.AppendOptionU64(b, "size_of_messages_required_to_save", t.sizeToSave)
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

func compressionName(c uint8) string {
	if c == 2 {
		return "gzip"
	}
	return "none"
}

// appendTopic appends a GetTopicResponse: header then PartitionResponses,
// in 0.12 each with its partition context (§9).
func appendTopic(b []byte, d proto.Dialect, t *topic) []byte {
	b = appendTopicHeader(b, d, t)
	for _, p := range t.partitions {
		b = proto.AppendU32(b, p.id)
		b = proto.AppendU64(b, p.created)
		b = proto.AppendU32(b, 1) // segments
		b = proto.AppendU64(b, p.currentOffset())
		b = proto.AppendU64(b, p.size)
		b = proto.AppendU64(b, p.next)
		if d == proto.Dialect012 {
			b = proto.AppendPartitionContext(b, p.context())
		}
	}
	return b
}

func appendGroupHeader(b []byte, t *topic, g *group) []byte {
	b = proto.AppendU32(b, g.id)
	b = proto.AppendU32(b, uint32(len(t.partitions)))
	b = proto.AppendU32(b, uint32(len(g.members)))
	return proto.AppendName(b, g.name)
}

// appendGroup appends ConsumerGroupDetails (§3.10).
func appendGroup(b []byte, t *topic, g *group) []byte {
	b = appendGroupHeader(b, t, g)
	for i, m := range g.members {
		parts := g.assignment(m, len(t.partitions))
		b = proto.AppendU32(b, uint32(i))
		b = proto.AppendU32(b, uint32(len(parts)))
		for _, p := range parts {
			b = proto.AppendU32(b, p)
		}
	}
	return b
}

func sortedStreams(s *Server) []*stream {
	out := make([]*stream, 0, len(s.streams))
	for _, x := range s.streams {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func sortedTopics(s *stream) []*topic {
	out := make([]*topic, 0, len(s.topics))
	for _, x := range s.topics {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func sortedGroups(t *topic) []*group {
	out := make([]*group, 0, len(t.groups))
	for _, x := range t.groups {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}
