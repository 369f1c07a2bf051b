package wire

// ApiVersions (key 18), versions 0–4 (docs/design/kafka-protocol.md §3).
//
// Request: v0–2 have an empty body; v3+ (flexible, KIP-511) carry
// ClientSoftwareName and ClientSoftwareVersion. Response: ErrorCode, ApiKeys,
// ThrottleTimeMs (v1+), then top-level tagged fields (v3+), of which kiggy
// emits none (no features are finalized, so FinalizedFeaturesEpoch defaults to
// -1 on the client). The response header is always v0 (AppendResponseHeader).

const (
	apiVersionsMinVersion = 0
	apiVersionsMaxVersion = 4
	// apiVersionsFlexible is the first flexible version: "flexibleVersions": "3+"
	// (the request body and the response body; the response header stays v0).
	apiVersionsFlexible int16 = 3
)

// APIVersionsRequest is an ApiVersions request body.
type APIVersionsRequest struct {
	// ClientSoftwareName and ClientSoftwareVersion (v3+) are views into the
	// frame, valid until the frame is released; empty before v3.
	ClientSoftwareName    string
	ClientSoftwareVersion string
}

// Decode parses an ApiVersions request body of the given version. Versions
// above 4 return ErrUnsupportedVersion without looking at the body: KIP-511
// says the broker must not parse a body it does not know, and answers with
// AppendAPIVersionsUnsupported instead.
func (r *APIVersionsRequest) Decode(body []byte, version int16) error {
	if version < apiVersionsMinVersion || version > apiVersionsMaxVersion {
		return ErrUnsupportedVersion
	}
	*r = APIVersionsRequest{}
	rd := NewReader(body)
	if version >= apiVersionsFlexible {
		r.ClientSoftwareName = rd.CompactString()
		r.ClientSoftwareVersion = rd.CompactString()
		rd.SkipTags()
	}
	return rd.Complete()
}

// AppendTo appends r encoded at version (a client's view; used by tests).
func (r *APIVersionsRequest) AppendTo(dst []byte, version int16) []byte {
	if version >= apiVersionsFlexible {
		dst = AppendCompactString(dst, r.ClientSoftwareName)
		dst = AppendCompactString(dst, r.ClientSoftwareVersion)
		dst = append(dst, 0)
	}
	return dst
}

// Valid reports whether r passes Kafka's v3+ check that both software
// strings match [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? (ApiVersionsRequest
// isValid); Kafka answers INVALID_REQUEST when they do not. Before v3 there is
// nothing to check.
func (r *APIVersionsRequest) Valid(version int16) bool {
	if version < 3 {
		return true
	}
	return ValidClientSoftware(r.ClientSoftwareName) && ValidClientSoftware(r.ClientSoftwareVersion)
}

// ValidClientSoftware reports whether s matches, as a whole, the KIP-511
// pattern [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?: non-empty ASCII letters,
// digits, '-' and '.', starting and ending with a letter or digit. It does not
// allocate.
func ValidClientSoftware(s string) bool {
	if s == "" || !isSoftwareAlnum(s[0]) || !isSoftwareAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isSoftwareAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isSoftwareAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// APIVersionsKey is one entry of the ApiKeys array: an API and the version
// range the broker serves.
type APIVersionsKey struct {
	APIKey     APIKey
	MinVersion int16
	MaxVersion int16
}

// APIVersionsResponse is an ApiVersions response body.
type APIVersionsResponse struct {
	ErrorCode ErrorCode
	// APIKeys lists exactly what the gateway serves (docs/design/kafka-protocol.md §3
	// rule 6); Kafka sorts it by key.
	APIKeys []APIVersionsKey
	// ThrottleMillis is v1+.
	ThrottleMillis int32
}

// AppendTo appends r's body encoded at version. No tagged fields are emitted.
// It does not allocate when dst has room.
func (r *APIVersionsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= apiVersionsFlexible
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendArrayLen(dst, flex, len(r.APIKeys))
	for i := range r.APIKeys {
		k := &r.APIKeys[i]
		dst = AppendInt16(dst, int16(k.APIKey))
		dst = AppendInt16(dst, k.MinVersion)
		dst = AppendInt16(dst, k.MaxVersion)
		// "each ApiKeys entry of an ApiVersions v3 response ends in 0x00"
		dst = AppendEmptyTags(dst, flex)
	}
	if version >= 1 {
		dst = AppendInt32(dst, r.ThrottleMillis)
	}
	return AppendEmptyTags(dst, flex)
}

// AppendAPIVersionsUnsupported appends the body kiggy sends to an ApiVersions
// request of a version it does not serve: the v0 format with error
// UNSUPPORTED_VERSION (35), the single entry {18, minVersion, maxVersion}
// and no throttle field. Clients retry with that max (KIP-511; Kafka's
// ApiVersionsRequest.getErrorResponse; docs/design/kafka-protocol.md §3 rule 2). The
// response header is v0.
func AppendAPIVersionsUnsupported(dst []byte, minVersion, maxVersion int16) []byte {
	dst = AppendInt16(dst, int16(UnsupportedVersion))
	dst = AppendInt32(dst, 1)
	dst = AppendInt16(dst, int16(KeyAPIVersions))
	dst = AppendInt16(dst, minVersion)
	return AppendInt16(dst, maxVersion)
}

// CountErrors reports r's error codes to c.
func (r *APIVersionsResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
