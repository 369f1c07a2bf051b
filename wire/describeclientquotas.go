package wire

// DescribeClientQuotas (key 48), versions 0–1, flexible from 1. From
// DescribeClientQuotasRequest.json and DescribeClientQuotasResponse.json in
// apache/kafka:
//
//	"validVersions": "0-1", "flexibleVersions": "1+"
//	request:  Components []{EntityType string, MatchType int8,
//	            Match nullable string}, Strict bool
//	response: ThrottleTimeMs int32, ErrorCode int16,
//	          ErrorMessage nullable string,
//	          Entries nullable []{Entity []{EntityType string,
//	            EntityName nullable string}, Values []{Key string,
//	            Value float64}}
//
// kiggy has no client quotas: kafka-configs --describe --entity-type users
// asks for them beside the SCRAM credentials (docs/design/security.md §8).

// describeClientQuotasFlexible is the first flexible version: "1+".
const describeClientQuotasFlexible int16 = 1

// DescribeClientQuotasRequest is a DescribeClientQuotas request, v0–1.
type DescribeClientQuotasRequest struct {
	// Components filter the quota entities.
	Components []QuotaFilterComponent
	// Strict excludes entities with unspecified entity types.
	Strict bool
}

// QuotaFilterComponent is one filter of a DescribeClientQuotas request.
type QuotaFilterComponent struct {
	// EntityType is "user", "client-id" or "ip".
	EntityType string
	// MatchType is 0 (exact name), 1 (default name) or 2 (any name).
	MatchType int8
	// Match is the name for MatchType 0, else null.
	Match NullString
}

// Decode parses a DescribeClientQuotas request body into r.
func (r *DescribeClientQuotasRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 1 {
		return ErrUnsupportedVersion
	}
	flex := version >= describeClientQuotasFlexible
	rd := NewReader(body)
	r.Components = resize(r.Components, arrayLen(&rd, flex, 4))
	for i := range r.Components {
		c := &r.Components[i]
		c.EntityType = rd.Str(flex)
		c.MatchType = rd.Int8()
		c.Match = nullStr(&rd, flex)
		if flex {
			rd.SkipTags()
		}
	}
	r.Strict = rd.Bool()
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// DescribeClientQuotasResponse is a DescribeClientQuotas response, v0–1.
type DescribeClientQuotasResponse struct {
	// ThrottleMillis is the client throttle in milliseconds.
	ThrottleMillis int32
	// ErrorCode is the request's error, or NoError.
	ErrorCode ErrorCode
	// ErrorMessage explains ErrorCode, or is null.
	ErrorMessage NullString
	// Entries are the matching entities; nil is a null array (sent with an
	// error).
	Entries []QuotaEntry
}

// QuotaEntry is one quota entity and its values.
type QuotaEntry struct {
	// Entity is the entity's (type, name) parts.
	Entity []QuotaEntity
	// Values are the quota values.
	Values []QuotaValue
}

// QuotaEntity is one part of a quota entity.
type QuotaEntity struct {
	// Type is the entity type.
	Type string
	// Name is the entity name, or null for the default.
	Name NullString
}

// QuotaValue is one quota value.
type QuotaValue struct {
	// Key is the quota configuration key.
	Key string
	// Value is the quota.
	Value float64
}

// AppendTo appends the response body at the given version to dst.
func (r *DescribeClientQuotasResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= describeClientQuotasFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendNullableStr(dst, flex, r.ErrorMessage.S, r.ErrorMessage.Valid)
	if r.Entries == nil {
		dst = AppendArrayLen(dst, flex, -1)
	} else {
		dst = AppendArrayLen(dst, flex, len(r.Entries))
	}
	for i := range r.Entries {
		e := &r.Entries[i]
		dst = AppendArrayLen(dst, flex, len(e.Entity))
		for _, en := range e.Entity {
			dst = AppendStr(dst, flex, en.Type)
			dst = AppendNullableStr(dst, flex, en.Name.S, en.Name.Valid)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendArrayLen(dst, flex, len(e.Values))
		for _, v := range e.Values {
			dst = AppendStr(dst, flex, v.Key)
			dst = AppendFloat64(dst, v.Value)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error code to c.
func (r *DescribeClientQuotasResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
