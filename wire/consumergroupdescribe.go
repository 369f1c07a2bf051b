package wire

// ConsumerGroupDescribe (key 69), versions 0–1, flexible from 0 (KIP-848;
// docs/design/consumer-groups.md).
//
// From ConsumerGroupDescribeRequest.json ("validVersions": "0-1",
// "flexibleVersions": "0+"): GroupIds []string; IncludeAuthorizedOperations
// bool.
//
// From ConsumerGroupDescribeResponse.json: ThrottleTimeMs int32; Groups
// []{ErrorCode int16; ErrorMessage string nullable; GroupId string;
// GroupState string; GroupEpoch int32; AssignmentEpoch int32; AssignorName
// string; Members []{MemberId string; InstanceId string nullable; RackId
// string nullable; MemberEpoch int32; ClientId string; ClientHost string;
// SubscribedTopicNames []string; SubscribedTopicRegex string nullable;
// Assignment Assignment; TargetAssignment Assignment; MemberType int8 1+
// (default -1)}; AuthorizedOperations int32}, where Assignment is
// {TopicPartitions []{TopicId uuid; TopicName string; Partitions []int32}}.

// consumerGroupDescribeFlexible is the first flexible version: "0+".
const consumerGroupDescribeFlexible int16 = 0

// ConsumerGroupDescribeRequest is a ConsumerGroupDescribe request, v0–1.
// Strings alias the frame: valid until the frame is released.
type ConsumerGroupDescribeRequest struct {
	// Groups are the group ids to describe.
	Groups []string
	// IncludeAuthorizedOperations asks for the authorized operations.
	IncludeAuthorizedOperations bool
}

// Decode parses a ConsumerGroupDescribe request body of the given version
// into r, reusing r's slices.
func (r *ConsumerGroupDescribeRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 1 {
		return ErrUnsupportedVersion
	}
	rd := NewReader(body)
	r.Groups = strs(&rd, true, false, r.Groups)
	r.IncludeAuthorizedOperations = rd.Bool()
	rd.SkipTags()
	return rd.Complete()
}

// ConsumerGroupDescribeResponse is a ConsumerGroupDescribe response, v0–1.
type ConsumerGroupDescribeResponse struct {
	// ThrottleMillis is the client throttle in milliseconds.
	ThrottleMillis int32
	// Groups are the described groups, in request order.
	Groups []ConsumerGroupDescribeGroup
}

// ConsumerGroupDescribeGroup is one described group.
type ConsumerGroupDescribeGroup struct {
	ErrorCode    ErrorCode
	ErrorMessage NullString
	Group        string
	// State is "Empty", "Assigning", "Reconciling", "Stable" or "Dead".
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerGroupDescribeMember
	// AuthorizedOperations is a bit field, or math.MinInt32 when not asked.
	AuthorizedOperations int32
}

// ConsumerGroupDescribeMember is one member of a described group.
type ConsumerGroupDescribeMember struct {
	MemberID             string
	InstanceID           NullString
	RackID               NullString
	MemberEpoch          int32
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex NullString
	Assignment           []ConsumerGroupDescribeTopic
	TargetAssignment     []ConsumerGroupDescribeTopic
	// MemberType is 1 for a consumer-protocol member, 0 for a classic one,
	// -1 unknown (v1+).
	MemberType int8
}

// ConsumerGroupDescribeTopic is one topic's partitions in an assignment.
type ConsumerGroupDescribeTopic struct {
	TopicID    [16]byte
	Topic      string
	Partitions []int32
}

// AppendTo appends the response body at the given version to dst.
func (r *ConsumerGroupDescribeResponse) AppendTo(dst []byte, version int16) []byte {
	const flex = true
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.Groups))
	for i := range r.Groups {
		g := &r.Groups[i]
		dst = AppendInt16(dst, int16(g.ErrorCode))
		dst = AppendNullableStr(dst, flex, g.ErrorMessage.S, g.ErrorMessage.Valid)
		dst = AppendStr(dst, flex, g.Group)
		dst = AppendStr(dst, flex, g.State)
		dst = AppendInt32(dst, g.Epoch)
		dst = AppendInt32(dst, g.AssignmentEpoch)
		dst = AppendStr(dst, flex, g.AssignorName)
		dst = AppendArrayLen(dst, flex, len(g.Members))
		for j := range g.Members {
			m := &g.Members[j]
			dst = AppendStr(dst, flex, m.MemberID)
			dst = AppendNullableStr(dst, flex, m.InstanceID.S, m.InstanceID.Valid)
			dst = AppendNullableStr(dst, flex, m.RackID.S, m.RackID.Valid)
			dst = AppendInt32(dst, m.MemberEpoch)
			dst = AppendStr(dst, flex, m.ClientID)
			dst = AppendStr(dst, flex, m.ClientHost)
			dst = AppendArrayLen(dst, flex, len(m.SubscribedTopicNames))
			for _, s := range m.SubscribedTopicNames {
				dst = AppendStr(dst, flex, s)
			}
			dst = AppendNullableStr(dst, flex, m.SubscribedTopicRegex.S, m.SubscribedTopicRegex.Valid)
			dst = appendDescribeAssignment(dst, m.Assignment)
			dst = appendDescribeAssignment(dst, m.TargetAssignment)
			if version >= 1 {
				dst = AppendInt8(dst, m.MemberType)
			}
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendInt32(dst, g.AuthorizedOperations)
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// appendDescribeAssignment appends an Assignment struct (not nullable).
func appendDescribeAssignment(dst []byte, ts []ConsumerGroupDescribeTopic) []byte {
	dst = AppendArrayLen(dst, true, len(ts))
	for i := range ts {
		t := &ts[i]
		dst = AppendUUID(dst, t.TopicID)
		dst = AppendStr(dst, true, t.Topic)
		dst = AppendArrayLen(dst, true, len(t.Partitions))
		for _, p := range t.Partitions {
			dst = AppendInt32(dst, p)
		}
		dst = AppendEmptyTags(dst, true)
	}
	return AppendEmptyTags(dst, true)
}

// CountErrors reports r's error codes to c.
func (r *ConsumerGroupDescribeResponse) CountErrors(c ErrorCounter) {
	for i := range r.Groups {
		countError(c, r.Groups[i].ErrorCode)
	}
}
