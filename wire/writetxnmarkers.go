package wire

// WriteTxnMarkers (key 27), versions 0–1, flexible from 1
// (WriteTxnMarkersRequest.json, WriteTxnMarkersResponse.json, "validVersions":
// "0-1", "flexibleVersions": "1+"). A transaction coordinator sends it to the
// leader of each partition of a transaction to write the commit or abort
// marker there; in a kiggy cluster one kiggy instance sends it to another
// ("listeners": ["broker"]: no client sends it). v1 is v0 made flexible.
// Newer Kafka (4.0) removed v0 and added v2 ("validVersions": "1-2"), which
// adds the marker's TransactionVersion int8 (KIP-890); wire implements 0–1.
//
// Unlike most codecs here, both messages have both directions: the gateway
// decodes requests and encodes responses, the coordinator's client side
// encodes requests and decodes responses.

const (
	// WriteTxnMarkersMinVersion is the lowest WriteTxnMarkers version wire
	// decodes.
	WriteTxnMarkersMinVersion int16 = 0
	// WriteTxnMarkersMaxVersion is the highest WriteTxnMarkers version wire
	// decodes.
	WriteTxnMarkersMaxVersion int16 = 1
	// WriteTxnMarkersFlexible is the first flexible version:
	// "flexibleVersions": "1+".
	WriteTxnMarkersFlexible int16 = 1
)

// WriteTxnMarkersRequest is a WriteTxnMarkers request body, v0–1. Strings
// alias the frame after Decode: valid until the frame is released.
type WriteTxnMarkersRequest struct {
	// Markers (Kafka: WritableTxnMarker) are the markers to write.
	Markers []WriteTxnMarker
}

// WriteTxnMarker is one transaction's marker, to write to each of its
// partitions.
type WriteTxnMarker struct {
	// ProducerID is the transaction's producer id.
	ProducerID int64
	// ProducerEpoch is the producer's current epoch.
	ProducerEpoch int16
	// TransactionResult is true to commit the transaction, false to abort
	// it.
	TransactionResult bool
	// Topics are the partitions to write the marker to.
	Topics []WriteTxnMarkerTopic
	// CoordinatorEpoch is the epoch of the coordinator's transaction state
	// partition.
	CoordinatorEpoch int32
}

// WriteTxnMarkerTopic is one topic of a WriteTxnMarker.
type WriteTxnMarkerTopic struct {
	// Name is the topic name.
	Name string
	// PartitionIndexes are the partitions to write the marker to.
	PartitionIndexes []int32
}

// Minimal encoded sizes of the elements, bounding the counts read from the
// wire by the bytes left: a marker is ProducerId, ProducerEpoch,
// TransactionResult, a Topics count and CoordinatorEpoch (and, flexible, its
// tags); a result marker is ProducerId and a Topics count (and tags); a
// partition result is PartitionIndex and ErrorCode (and tags).
func writeTxnMarkerMinSize(flex bool) int {
	if flex {
		return 8 + 2 + 1 + 1 + 4 + 1
	}
	return 8 + 2 + 1 + 4 + 4
}

func writeTxnMarkerResultMinSize(flex bool) int {
	if flex {
		return 8 + 1 + 1
	}
	return 8 + 4
}

func writeTxnMarkerPartitionResultMinSize(flex bool) int {
	if flex {
		return 4 + 2 + 1
	}
	return 4 + 2
}

// Decode parses a WriteTxnMarkers request body of the given version into r,
// reusing the capacity of r's slices. Strings alias body: they are valid
// until the frame is released. On error r's contents are unspecified.
func (r *WriteTxnMarkersRequest) Decode(body []byte, version int16) error {
	if version < WriteTxnMarkersMinVersion || version > WriteTxnMarkersMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= WriteTxnMarkersFlexible
	rd := NewReader(body)
	r.Markers = resize(r.Markers, arrayLen(&rd, flex, writeTxnMarkerMinSize(flex)))
	for i := range r.Markers {
		m := &r.Markers[i]
		m.ProducerID = rd.Int64()
		m.ProducerEpoch = rd.Int16()
		m.TransactionResult = rd.Bool()
		m.Topics = resize(m.Topics, arrayLen(&rd, flex, minStringArraySize(flex)))
		for j := range m.Topics {
			t := &m.Topics[j]
			t.Name = rd.Str(flex)
			t.PartitionIndexes = int32s(&rd, flex, t.PartitionIndexes)
			endStruct(&rd, flex)
		}
		m.CoordinatorEpoch = rd.Int32()
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// AppendTo appends r encoded at version (the coordinator's client side).
// It does not allocate when dst has room.
func (r *WriteTxnMarkersRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= WriteTxnMarkersFlexible
	dst = AppendArrayLen(dst, flex, len(r.Markers))
	for i := range r.Markers {
		m := &r.Markers[i]
		dst = AppendInt64(dst, m.ProducerID)
		dst = AppendInt16(dst, m.ProducerEpoch)
		dst = AppendBool(dst, m.TransactionResult)
		dst = AppendArrayLen(dst, flex, len(m.Topics))
		for j := range m.Topics {
			t := &m.Topics[j]
			dst = AppendStr(dst, flex, t.Name)
			dst = AppendArrayLen(dst, flex, len(t.PartitionIndexes))
			for _, p := range t.PartitionIndexes {
				dst = AppendInt32(dst, p)
			}
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendInt32(dst, m.CoordinatorEpoch)
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// WriteTxnMarkersResponse is a WriteTxnMarkers response body, v0–1. Strings
// alias the frame after Decode: valid until the frame is released.
type WriteTxnMarkersResponse struct {
	// Markers (Kafka: WritableTxnMarkerResult) answer the requested
	// markers.
	Markers []WriteTxnMarkerResult
}

// WriteTxnMarkerResult answers one WriteTxnMarker.
type WriteTxnMarkerResult struct {
	// ProducerID is the marker's producer id.
	ProducerID int64
	// Topics are the results by topic.
	Topics []WriteTxnMarkerTopicResult
}

// WriteTxnMarkerTopicResult answers one topic of a WriteTxnMarker.
type WriteTxnMarkerTopicResult struct {
	// Name is the topic name.
	Name string
	// Partitions are the results by partition.
	Partitions []WriteTxnMarkerPartitionResult
}

// WriteTxnMarkerPartitionResult answers one partition.
type WriteTxnMarkerPartitionResult struct {
	// PartitionIndex is the partition index.
	PartitionIndex int32
	// ErrorCode is the partition's error, or NoError.
	ErrorCode ErrorCode
}

// Decode parses a WriteTxnMarkers response body of the given version into
// r (the coordinator's client side), reusing the capacity of r's slices.
// Strings alias body. On error r's contents are unspecified.
func (r *WriteTxnMarkersResponse) Decode(body []byte, version int16) error {
	if version < WriteTxnMarkersMinVersion || version > WriteTxnMarkersMaxVersion {
		return ErrUnsupportedVersion
	}
	flex := version >= WriteTxnMarkersFlexible
	rd := NewReader(body)
	r.Markers = resize(r.Markers, arrayLen(&rd, flex, writeTxnMarkerResultMinSize(flex)))
	for i := range r.Markers {
		m := &r.Markers[i]
		m.ProducerID = rd.Int64()
		m.Topics = resize(m.Topics, arrayLen(&rd, flex, minStringArraySize(flex)))
		for j := range m.Topics {
			t := &m.Topics[j]
			t.Name = rd.Str(flex)
			t.Partitions = resize(t.Partitions, arrayLen(&rd, flex, writeTxnMarkerPartitionResultMinSize(flex)))
			for k := range t.Partitions {
				p := &t.Partitions[k]
				p.PartitionIndex = rd.Int32()
				p.ErrorCode = ErrorCode(rd.Int16())
				endStruct(&rd, flex)
			}
			endStruct(&rd, flex)
		}
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// AppendTo appends r's body encoded at version. It does not allocate when
// dst has room.
func (r *WriteTxnMarkersResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= WriteTxnMarkersFlexible
	dst = AppendArrayLen(dst, flex, len(r.Markers))
	for i := range r.Markers {
		m := &r.Markers[i]
		dst = AppendInt64(dst, m.ProducerID)
		dst = AppendArrayLen(dst, flex, len(m.Topics))
		for j := range m.Topics {
			t := &m.Topics[j]
			dst = AppendStr(dst, flex, t.Name)
			dst = AppendArrayLen(dst, flex, len(t.Partitions))
			for k := range t.Partitions {
				p := &t.Partitions[k]
				dst = AppendInt32(dst, p.PartitionIndex)
				dst = AppendInt16(dst, int16(p.ErrorCode))
				dst = AppendEmptyTags(dst, flex)
			}
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *WriteTxnMarkersResponse) CountErrors(c ErrorCounter) {
	for i := range r.Markers {
		for j := range r.Markers[i].Topics {
			for k := range r.Markers[i].Topics[j].Partitions {
				countError(c, r.Markers[i].Topics[j].Partitions[k].ErrorCode)
			}
		}
	}
}
