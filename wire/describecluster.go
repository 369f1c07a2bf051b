package wire

// DescribeCluster (key 60), versions 0–2, flexible in every version
// (docs/design/kafka-protocol.md §2.1, §2.4). "Version 1 adds EndpointType for KIP-919
// support"; version 2 adds IncludeFencedBrokers and IsFenced (KIP-1073, from
// franz-go's transcription of the 4.x schema).

const (
	describeClusterMin, describeClusterMax int16 = 0, 2
	describeClusterFlexible                int16 = 0
)

// DescribeClusterRequest is the body of a DescribeCluster request.
type DescribeClusterRequest struct {
	// IncludeClusterAuthorizedOperations asks for
	// ClusterAuthorizedOperations.
	IncludeClusterAuthorizedOperations bool
	// EndpointType is what to describe: 1 brokers, 2 controllers (v1+; v0
	// decodes as the schema default 1).
	EndpointType int8
	// IncludeFencedBrokers asks for fenced brokers too (v2+).
	IncludeFencedBrokers bool
}

// Decode parses a DescribeCluster request body of the given version into r.
// Unknown tagged fields are skipped.
func (r *DescribeClusterRequest) Decode(body []byte, version int16) error {
	if version < describeClusterMin || version > describeClusterMax {
		return ErrUnsupportedVersion
	}
	flex := version >= describeClusterFlexible
	rd := NewReader(body)
	r.IncludeClusterAuthorizedOperations = rd.Bool()
	// EndpointType: "versions": "1+", "default": "1".
	r.EndpointType = 1
	if version >= 1 {
		r.EndpointType = rd.Int8()
	}
	r.IncludeFencedBrokers = false
	if version >= 2 {
		r.IncludeFencedBrokers = rd.Bool()
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// DescribeClusterResponse is the body of a DescribeCluster response. Keep it
// consistent with Metadata (docs/design/kafka-protocol.md §2.4).
type DescribeClusterResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// ErrorCode is the top-level result.
	ErrorCode ErrorCode
	// ErrorMessage is a human-readable error, null on success.
	ErrorMessage NullString
	// EndpointType echoes the request (v1+).
	EndpointType int8
	// ClusterID is the cluster id.
	ClusterID string
	// ControllerID is the controller's broker id (Kafka's default -1).
	ControllerID int32
	// Brokers are the cluster's brokers.
	Brokers []DescribeClusterResponseBroker
	// ClusterAuthorizedOperations is a bitfield of allowed cluster
	// operations; Kafka's default is math.MinInt32, "not requested".
	ClusterAuthorizedOperations int32
}

// DescribeClusterResponseBroker is one broker.
type DescribeClusterResponseBroker struct {
	// NodeID (Kafka: BrokerId) is the broker id.
	NodeID int32
	// Host is the advertised host.
	Host string
	// Port is the advertised port.
	Port int32
	// Rack is the broker's rack, or null.
	Rack NullString
	// IsFenced reports whether the broker is fenced (v2+).
	IsFenced bool
}

// AppendTo appends the response body for the given version to dst.
func (r *DescribeClusterResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= describeClusterFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendNullableStr(dst, flex, r.ErrorMessage.S, r.ErrorMessage.Valid)
	// "Version 1 adds the EndpointType field."
	if version >= 1 {
		dst = AppendInt8(dst, r.EndpointType)
	}
	dst = AppendStr(dst, flex, r.ClusterID)
	dst = AppendInt32(dst, r.ControllerID)
	dst = AppendArrayLen(dst, flex, len(r.Brokers))
	for i := range r.Brokers {
		b := &r.Brokers[i]
		dst = AppendInt32(dst, b.NodeID)
		dst = AppendStr(dst, flex, b.Host)
		dst = AppendInt32(dst, b.Port)
		dst = AppendNullableStr(dst, flex, b.Rack.S, b.Rack.Valid)
		if version >= 2 {
			dst = AppendBool(dst, b.IsFenced)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	dst = AppendInt32(dst, r.ClusterAuthorizedOperations)
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DescribeClusterResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
