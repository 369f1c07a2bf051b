package wire

// DeleteGroups (key 42), versions 0–3, flexible from 2. From
// DeleteGroupsRequest.json and DeleteGroupsResponse.json in apache/kafka:
//
//	"validVersions": "0-3", "flexibleVersions": "2+"
//	request:  GroupsNames []string (0+)
//	response: ThrottleTimeMs int32 (0+),
//	          Results []{GroupId string, ErrorCode int16, ErrorMessage nullable string (3+)}
//
// "Version 1 is the same as version 0" (v1 responses are sent before
// throttling); "Version 3 adds the per-group ErrorMessage field".

// deleteGroupsFlexible is the first flexible version: "flexibleVersions": "2+".
const deleteGroupsFlexible int16 = 2

// DeleteGroupsRequest is a DeleteGroups request, v0–3. Strings alias the
// frame: valid until the frame is released.
type DeleteGroupsRequest struct {
	// Groups are the group ids to delete (GroupsNames).
	Groups []string
}

// Decode parses a DeleteGroups request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is
// released. On error r's contents are unspecified.
func (r *DeleteGroupsRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 3 {
		return ErrUnsupportedVersion
	}
	flex := version >= deleteGroupsFlexible
	rd := NewReader(body)
	r.Groups = strs(&rd, flex, false, r.Groups)
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// DeleteGroupsResponse is a DeleteGroups response, v0–3.
type DeleteGroupsResponse struct {
	// ThrottleMillis is the client throttle in milliseconds.
	ThrottleMillis int32
	// Results holds one entry per group.
	Results []DeleteGroupsResponseResult
}

// DeleteGroupsResponseResult is one group's deletion result
// (DeletableGroupResult).
type DeleteGroupsResponseResult struct {
	// Group is the group id.
	Group string
	// ErrorCode is the deletion error, or NoError.
	ErrorCode ErrorCode
	// ErrorMessage is the cause of a non-NoError ErrorCode (v3+), or null.
	ErrorMessage NullString
}

// AppendTo appends the response body at the given version to dst.
func (r *DeleteGroupsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= deleteGroupsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.Results))
	for i := range r.Results {
		g := &r.Results[i]
		dst = AppendStr(dst, flex, g.Group)
		dst = AppendInt16(dst, int16(g.ErrorCode))
		if version >= 3 {
			dst = AppendNullableStr(dst, flex, g.ErrorMessage.S, g.ErrorMessage.Valid)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DeleteGroupsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Results {
		countError(c, r.Results[i].ErrorCode)
	}
}
