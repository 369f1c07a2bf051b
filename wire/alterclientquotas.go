package wire

// AlterClientQuotas (key 49), versions 0–1, flexible from 1. From
// AlterClientQuotasRequest.json and AlterClientQuotasResponse.json in
// apache/kafka:
//
//	"validVersions": "0-1", "flexibleVersions": "1+"
//	request:  Entries []{Entity []{EntityType string,
//	            EntityName nullable string}, Ops []{Key string,
//	            Value float64, Remove bool}}, ValidateOnly bool
//	response: ThrottleTimeMs int32, Entries []{ErrorCode int16,
//	            ErrorMessage nullable string, Entity []{EntityType string,
//	            EntityName nullable string}}

// alterClientQuotasFlexible is the first flexible version: "1+".
const alterClientQuotasFlexible int16 = 1

// AlterClientQuotasRequest is an AlterClientQuotas request, v0–1.
type AlterClientQuotasRequest struct {
	// Entries are the entities to alter, each with its operations.
	Entries []QuotaAlteration
	// ValidateOnly checks the alterations without making them.
	ValidateOnly bool
}

// QuotaAlteration is one entity of an AlterClientQuotas request.
type QuotaAlteration struct {
	// Entity is the entity's (type, name) parts; a null name is the
	// type's default.
	Entity []QuotaEntity
	// Ops are the quota values to set or remove.
	Ops []QuotaOp
}

// QuotaOp is one quota value to set or remove.
type QuotaOp struct {
	// Key is the quota configuration key.
	Key string
	// Value is the value to set; ignored when Remove.
	Value float64
	// Remove removes the key's value instead of setting it.
	Remove bool
}

// Decode parses an AlterClientQuotas request body into r.
func (r *AlterClientQuotasRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 1 {
		return ErrUnsupportedVersion
	}
	flex := version >= alterClientQuotasFlexible
	rd := NewReader(body)
	r.Entries = resize(r.Entries, arrayLen(&rd, flex, 2))
	for i := range r.Entries {
		e := &r.Entries[i]
		e.Entity = resize(e.Entity, arrayLen(&rd, flex, 3))
		for j := range e.Entity {
			en := &e.Entity[j]
			en.Type = rd.Str(flex)
			en.Name = nullStr(&rd, flex)
			if flex {
				rd.SkipTags()
			}
		}
		e.Ops = resize(e.Ops, arrayLen(&rd, flex, 11))
		for j := range e.Ops {
			op := &e.Ops[j]
			op.Key = rd.Str(flex)
			op.Value = rd.Float64()
			op.Remove = rd.Bool()
			if flex {
				rd.SkipTags()
			}
		}
		if flex {
			rd.SkipTags()
		}
	}
	r.ValidateOnly = rd.Bool()
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// AlterClientQuotasResponse is an AlterClientQuotas response, v0–1.
type AlterClientQuotasResponse struct {
	// ThrottleMillis is the client throttle in milliseconds.
	ThrottleMillis int32
	// Entries are the outcomes, one an entity of the request.
	Entries []QuotaAlterationResult
}

// QuotaAlterationResult is one entity's outcome.
type QuotaAlterationResult struct {
	// ErrorCode is the entity's error, or NoError.
	ErrorCode ErrorCode
	// ErrorMessage explains ErrorCode, or is null.
	ErrorMessage NullString
	// Entity is the entity as the request named it.
	Entity []QuotaEntity
}

// AppendTo appends the response body at the given version to dst.
func (r *AlterClientQuotasResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= alterClientQuotasFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.Entries))
	for i := range r.Entries {
		e := &r.Entries[i]
		dst = AppendInt16(dst, int16(e.ErrorCode))
		dst = AppendNullableStr(dst, flex, e.ErrorMessage.S, e.ErrorMessage.Valid)
		dst = AppendArrayLen(dst, flex, len(e.Entity))
		for _, en := range e.Entity {
			dst = AppendStr(dst, flex, en.Type)
			dst = AppendNullableStr(dst, flex, en.Name.S, en.Name.Valid)
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *AlterClientQuotasResponse) CountErrors(c ErrorCounter) {
	for i := range r.Entries {
		countError(c, r.Entries[i].ErrorCode)
	}
}
