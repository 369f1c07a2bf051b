package wire

// DescribeLogDirs (key 35), versions 1–4 (DescribeLogDirsRequest.json and
// DescribeLogDirsResponse.json: "validVersions": "0-4", "flexibleVersions":
// "2+"; v0 is deprecated and Kafka 4.x serves 1–4, KIP-896). It reports
// where a broker keeps each partition and how many bytes it holds:
// `kafka-log-dirs --describe`, Admin.describeLogDirs, the topic sizes of
// Kafka UIs and Cruise Control.

const (
	describeLogDirsMin, describeLogDirsMax int16 = 1, 4
	describeLogDirsFlexible                int16 = 2
)

// DescribeLogDirsRequest is the body of a DescribeLogDirs request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type DescribeLogDirsRequest struct {
	// Topics are the partitions to describe; nil (a null array: "null for
	// all topics") asks for every partition the broker holds.
	Topics []TopicPartitions
}

// Decode parses a DescribeLogDirs request body of the given version into
// r, reusing the capacity of r's slices. Strings alias body: they are
// valid until the frame is released. Unknown tagged fields are skipped. On
// error r's contents are unspecified.
func (r *DescribeLogDirsRequest) Decode(body []byte, version int16) error {
	if version < describeLogDirsMin || version > describeLogDirsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= describeLogDirsFlexible
	rd := NewReader(body)
	// "Topics ... nullableVersions 0+".
	r.Topics = decodeTopicPartitions(&rd, flex, r.Topics)
	endStruct(&rd, flex)
	return rd.Complete()
}

// DescribeLogDirsResponse is the body of a DescribeLogDirs response.
type DescribeLogDirsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// ErrorCode is the request's result (v3+; before v3 a refused request
	// is an empty Results).
	ErrorCode ErrorCode
	// Results holds one entry per log directory.
	Results []DescribeLogDirsResult
}

// DescribeLogDirsResult is one log directory.
type DescribeLogDirsResult struct {
	// ErrorCode is the directory's result.
	ErrorCode ErrorCode
	// LogDir is the directory's path (Kafka: absolute).
	LogDir string
	// Topics are the described partitions it holds, by topic.
	Topics []DescribeLogDirsTopic
	// TotalBytes and UsableBytes are the size and free space of the
	// directory's volume (v4+; -1 unknown).
	TotalBytes, UsableBytes int64
}

// DescribeLogDirsTopic is one topic's partitions in a log directory.
type DescribeLogDirsTopic struct {
	// Topic (Kafka: Name) is the topic name.
	Topic string
	// Partitions are its partitions there.
	Partitions []DescribeLogDirsPartition
}

// DescribeLogDirsPartition is one partition in a log directory.
type DescribeLogDirsPartition struct {
	// Partition (Kafka: PartitionIndex) is the partition index.
	Partition int32
	// Size (Kafka: PartitionSize) is the bytes its log holds.
	Size int64
	// OffsetLag is the log end offset's lag behind the high watermark.
	OffsetLag int64
	// IsFuture (Kafka: IsFutureKey) marks a log AlterReplicaLogDirs is
	// moving in.
	IsFuture bool
}

// AppendTo appends the response body for the given version to dst.
func (r *DescribeLogDirsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= describeLogDirsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	if version >= 3 {
		dst = AppendInt16(dst, int16(r.ErrorCode))
	}
	dst = AppendArrayLen(dst, flex, len(r.Results))
	for i := range r.Results {
		d := &r.Results[i]
		dst = AppendInt16(dst, int16(d.ErrorCode))
		dst = AppendStr(dst, flex, d.LogDir)
		dst = AppendArrayLen(dst, flex, len(d.Topics))
		for j := range d.Topics {
			t := &d.Topics[j]
			dst = AppendStr(dst, flex, t.Topic)
			dst = AppendArrayLen(dst, flex, len(t.Partitions))
			for k := range t.Partitions {
				p := &t.Partitions[k]
				dst = AppendInt32(dst, p.Partition)
				dst = AppendInt64(dst, p.Size)
				dst = AppendInt64(dst, p.OffsetLag)
				dst = AppendBool(dst, p.IsFuture)
				dst = AppendEmptyTags(dst, flex)
			}
			dst = AppendEmptyTags(dst, flex)
		}
		if version >= 4 {
			dst = AppendInt64(dst, d.TotalBytes)
			dst = AppendInt64(dst, d.UsableBytes)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DescribeLogDirsResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Results {
		countError(c, r.Results[i].ErrorCode)
	}
}
