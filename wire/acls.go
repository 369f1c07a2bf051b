package wire

// The ACL admin APIs, versions 1–3, flexible from 2. From the schemas in
// apache/kafka (DescribeAclsRequest.json, DescribeAclsResponse.json,
// CreateAclsRequest.json, CreateAclsResponse.json, DeleteAclsRequest.json,
// DeleteAclsResponse.json):
//
//	"validVersions": "0-3", "deprecatedVersions": "0", "flexibleVersions": "2+"
//	"Version 1 adds resource pattern type. Version 2 enables flexible
//	versions. Version 3 adds user resource type."
//
// v0 (no pattern type) is the deprecated version Kafka 4.0 removed (KIP-896)
// and is not served (docs/design/kafka-protocol.md §2.1).
//
//	DescribeAcls (29) request:  ResourceTypeFilter int8, ResourceNameFilter nullable string,
//	                            PatternTypeFilter int8 (1+), PrincipalFilter nullable string,
//	                            HostFilter nullable string, Operation int8, PermissionType int8
//	DescribeAcls response:      ThrottleTimeMs int32, ErrorCode int16, ErrorMessage nullable string,
//	                            Resources []{ResourceType int8, ResourceName string, PatternType int8 (1+),
//	                              Acls []{Principal string, Host string, Operation int8, PermissionType int8}}
//	CreateAcls (30) request:    Creations []{ResourceType int8, ResourceName string, ResourcePatternType int8 (1+),
//	                              Principal string, Host string, Operation int8, PermissionType int8}
//	CreateAcls response:        ThrottleTimeMs int32, Results []{ErrorCode int16, ErrorMessage nullable string}
//	DeleteAcls (31) request:    Filters []{the DescribeAcls request's seven fields}
//	DeleteAcls response:        ThrottleTimeMs int32, FilterResults []{ErrorCode int16, ErrorMessage nullable string,
//	                              MatchingAcls []{ErrorCode int16, ErrorMessage nullable string, ResourceType int8,
//	                                ResourceName string, PatternType int8 (1+), Principal string, Host string,
//	                                Operation int8, PermissionType int8}}

const (
	aclsMin, aclsMax int16 = 1, 3
	// aclsFlexible is the first flexible version of the three APIs:
	// "flexibleVersions": "2+".
	aclsFlexible int16 = 2
)

// ACLFilter selects ACLs: the DescribeAcls request, and one DeleteAcls
// filter. Strings alias the frame.
type ACLFilter struct {
	ResourceType int8
	// ResourceName null matches every name.
	ResourceName NullString
	PatternType  int8
	// Principal null matches every principal.
	Principal NullString
	// Host null matches every host.
	Host       NullString
	Operation  int8
	Permission int8
}

func (f *ACLFilter) decode(rd *Reader, flex bool) {
	f.ResourceType = rd.Int8()
	f.ResourceName = nullStr(rd, flex)
	f.PatternType = rd.Int8()
	f.Principal = nullStr(rd, flex)
	f.Host = nullStr(rd, flex)
	f.Operation = rd.Int8()
	f.Permission = rd.Int8()
}

// DescribeAclsRequest is a DescribeAcls request, v1–3.
type DescribeAclsRequest struct {
	Filter ACLFilter
}

// Decode parses a DescribeAcls request body of the given version into r.
// Strings alias body: valid until the frame is released.
func (r *DescribeAclsRequest) Decode(body []byte, version int16) error {
	if version < aclsMin || version > aclsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= aclsFlexible
	rd := NewReader(body)
	r.Filter.decode(&rd, flex)
	endStruct(&rd, flex)
	return rd.Complete()
}

// ACLDescription is one ACL of a resource pattern (AclDescription).
type ACLDescription struct {
	Principal  string
	Host       string
	Operation  int8
	Permission int8
}

// DescribeAclsResource is one resource pattern and its ACLs.
type DescribeAclsResource struct {
	ResourceType int8
	ResourceName string
	PatternType  int8
	ACLs         []ACLDescription
}

// DescribeAclsResponse is a DescribeAcls response, v1–3.
type DescribeAclsResponse struct {
	ThrottleMillis int32
	ErrorCode      ErrorCode
	ErrorMessage   NullString
	Resources      []DescribeAclsResource
}

// AppendTo appends the response body at the given version to dst.
func (r *DescribeAclsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= aclsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendNullableStr(dst, flex, r.ErrorMessage.S, r.ErrorMessage.Valid)
	dst = AppendArrayLen(dst, flex, len(r.Resources))
	for i := range r.Resources {
		res := &r.Resources[i]
		dst = AppendInt8(dst, res.ResourceType)
		dst = AppendStr(dst, flex, res.ResourceName)
		dst = AppendInt8(dst, res.PatternType)
		dst = AppendArrayLen(dst, flex, len(res.ACLs))
		for j := range res.ACLs {
			a := &res.ACLs[j]
			dst = AppendStr(dst, flex, a.Principal)
			dst = AppendStr(dst, flex, a.Host)
			dst = AppendInt8(dst, a.Operation)
			dst = AppendInt8(dst, a.Permission)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// ACLCreation is one ACL to create (AclCreation). Strings alias the frame.
type ACLCreation struct {
	ResourceType int8
	ResourceName string
	PatternType  int8
	Principal    string
	Host         string
	Operation    int8
	Permission   int8
}

// CreateAclsRequest is a CreateAcls request, v1–3.
type CreateAclsRequest struct {
	Creations []ACLCreation
}

// Decode parses a CreateAcls request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is released.
func (r *CreateAclsRequest) Decode(body []byte, version int16) error {
	if version < aclsMin || version > aclsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= aclsFlexible
	rd := NewReader(body)
	// A creation is at least 4 int8s and 3 strings (1 byte each when
	// flexible, 2 otherwise).
	minElem := 10
	if flex {
		minElem = 8
	}
	r.Creations = resize(r.Creations, arrayLen(&rd, flex, minElem))
	for i := range r.Creations {
		c := &r.Creations[i]
		c.ResourceType = rd.Int8()
		c.ResourceName = rd.Str(flex)
		c.PatternType = rd.Int8()
		c.Principal = rd.Str(flex)
		c.Host = rd.Str(flex)
		c.Operation = rd.Int8()
		c.Permission = rd.Int8()
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// ACLResult is the outcome of one ACL creation (AclCreationResult).
type ACLResult struct {
	ErrorCode    ErrorCode
	ErrorMessage NullString
}

// CreateAclsResponse is a CreateAcls response, v1–3.
type CreateAclsResponse struct {
	ThrottleMillis int32
	Results        []ACLResult
}

// AppendTo appends the response body at the given version to dst.
func (r *CreateAclsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= aclsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.Results))
	for i := range r.Results {
		res := &r.Results[i]
		dst = AppendInt16(dst, int16(res.ErrorCode))
		dst = AppendNullableStr(dst, flex, res.ErrorMessage.S, res.ErrorMessage.Valid)
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// DeleteAclsRequest is a DeleteAcls request, v1–3.
type DeleteAclsRequest struct {
	Filters []ACLFilter
}

// Decode parses a DeleteAcls request body of the given version into r,
// reusing r's slices. Strings alias body: valid until the frame is released.
func (r *DeleteAclsRequest) Decode(body []byte, version int16) error {
	if version < aclsMin || version > aclsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= aclsFlexible
	rd := NewReader(body)
	minElem := 10
	if flex {
		minElem = 8
	}
	r.Filters = resize(r.Filters, arrayLen(&rd, flex, minElem))
	for i := range r.Filters {
		r.Filters[i].decode(&rd, flex)
		endStruct(&rd, flex)
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// DeleteAclsMatchingACL is one ACL a filter deleted (DeleteAclsMatchingAcl).
type DeleteAclsMatchingACL struct {
	ErrorCode    ErrorCode
	ErrorMessage NullString
	ResourceType int8
	ResourceName string
	PatternType  int8
	Principal    string
	Host         string
	Operation    int8
	Permission   int8
}

// DeleteAclsFilterResult is the outcome of one filter.
type DeleteAclsFilterResult struct {
	ErrorCode    ErrorCode
	ErrorMessage NullString
	MatchingACLs []DeleteAclsMatchingACL
}

// DeleteAclsResponse is a DeleteAcls response, v1–3.
type DeleteAclsResponse struct {
	ThrottleMillis int32
	FilterResults  []DeleteAclsFilterResult
}

// AppendTo appends the response body at the given version to dst.
func (r *DeleteAclsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= aclsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.FilterResults))
	for i := range r.FilterResults {
		fr := &r.FilterResults[i]
		dst = AppendInt16(dst, int16(fr.ErrorCode))
		dst = AppendNullableStr(dst, flex, fr.ErrorMessage.S, fr.ErrorMessage.Valid)
		dst = AppendArrayLen(dst, flex, len(fr.MatchingACLs))
		for j := range fr.MatchingACLs {
			m := &fr.MatchingACLs[j]
			dst = AppendInt16(dst, int16(m.ErrorCode))
			dst = AppendNullableStr(dst, flex, m.ErrorMessage.S, m.ErrorMessage.Valid)
			dst = AppendInt8(dst, m.ResourceType)
			dst = AppendStr(dst, flex, m.ResourceName)
			dst = AppendInt8(dst, m.PatternType)
			dst = AppendStr(dst, flex, m.Principal)
			dst = AppendStr(dst, flex, m.Host)
			dst = AppendInt8(dst, m.Operation)
			dst = AppendInt8(dst, m.Permission)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DescribeAclsResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *CreateAclsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Results {
		countError(c, r.Results[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *DeleteAclsResponse) CountErrors(c ErrorCounter) {
	for i := range r.FilterResults {
		fr := &r.FilterResults[i]
		countError(c, fr.ErrorCode)
		for j := range fr.MatchingACLs {
			countError(c, fr.MatchingACLs[j].ErrorCode)
		}
	}
}
