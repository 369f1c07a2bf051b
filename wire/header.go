package wire

import "errors"

// Request and response headers (docs/design/kafka-protocol.md §1.4).
//
// The header version is not on the wire: it follows from the API key and
// version. Request header v1 is key, version, correlation id and an INT16
// client id; v2 adds a TAGGED_FIELDS section and is used by every flexible
// request version. Response header v0 is the correlation id alone; v1 adds
// TAGGED_FIELDS and is used by every flexible response version except
// ApiVersions, which always answers with v0 (KIP-511).

// ErrUnsupportedVersion means the API key is unknown to the APIs table, or its
// version is outside what the codec decodes. Kafka closes the connection
// without a response in that case (docs/design/kafka-protocol.md §1.1); ApiVersions is
// the exception (KIP-511, see ParseRequestHeader).
var ErrUnsupportedVersion = errors.New("wire: unsupported API key or version")

// RequestHeader is a parsed request header v1 or v2.
type RequestHeader struct {
	APIKey        APIKey
	APIVersion    int16
	CorrelationID int32
	// ClientID is a view into the frame, valid until the frame is released.
	// Kafka treats a null client id as "" (RequestHeader.java parse).
	ClientID NullString
}

// ParseRequestHeader parses the header at the start of frame (the request
// without its 4-byte size) and returns it with the body that follows. The
// client id and body alias frame: they are valid until the frame is released.
//
// The header version is chosen from the APIs table: v2 if the version is
// flexible, else v1. In v2 the client id is still the INT16-length string
// ("flexibleVersions": "none" on ClientId in RequestHeader.json), followed by
// tagged fields, which are skipped.
//
// An unknown key, or a version outside the table's [Min, Max], returns the
// key, version and correlation id with ErrUnsupportedVersion, and no body.
// ApiVersions is accepted at any version ≥ its Min (KIP-511;
// docs/design/kafka-protocol.md §3 rules 1 and 2: never close the connection
// for an unknown ApiVersions version, answer a too-new one):
// its header is parsed with the normal rule (v2 from version 3 on) and the
// error is nil, so the handler can answer with AppendAPIVersionsUnsupported.
//
// It does not allocate.
func ParseRequestHeader(frame []byte) (h RequestHeader, body []byte, err error) {
	r := NewReader(frame)
	h.APIKey = APIKey(r.Int16())
	h.APIVersion = r.Int16()
	h.CorrelationID = r.Int32()
	if err := r.Err(); err != nil {
		return h, nil, err
	}
	a, ok := LookupAPI(h.APIKey)
	if !ok || h.APIVersion < a.Min || (h.APIVersion > a.Max && h.APIKey != KeyAPIVersions) {
		return h, nil, ErrUnsupportedVersion
	}
	s, valid := r.NullableString()
	h.ClientID = NullString{S: s, Valid: valid}
	if h.APIVersion >= a.FlexibleFrom {
		// Request header v2: "No header tagged fields are defined for
		// client→broker use today; skip whatever arrives."
		r.SkipTags()
	}
	if err := r.Err(); err != nil {
		return h, nil, err
	}
	return h, r.Rest(), nil
}

// AppendRequestHeader appends h as request header v1, or v2 when h's version
// is flexible. Clients (and tests) use it; the gateway only parses headers.
func AppendRequestHeader(dst []byte, h RequestHeader) []byte {
	dst = AppendInt16(dst, int16(h.APIKey))
	dst = AppendInt16(dst, h.APIVersion)
	dst = AppendInt32(dst, h.CorrelationID)
	dst = AppendNullableString(dst, h.ClientID.S, h.ClientID.Valid)
	return AppendEmptyTags(dst, Flexible(h.APIKey, h.APIVersion))
}

// AppendResponseHeader appends the response header for version of key:
// v1 (correlation id and an empty tagged-field section) when the version is
// flexible, v0 (correlation id only) otherwise. ApiVersions responses always
// use v0, even for the flexible v3+ bodies, so that a client that does not
// yet know the broker's versions can always read the header (KIP-511;
// docs/design/kafka-protocol.md §1.4).
func AppendResponseHeader(dst []byte, key APIKey, version int16, correlationID int32) []byte {
	dst = AppendInt32(dst, correlationID)
	if key != KeyAPIVersions && Flexible(key, version) {
		dst = append(dst, 0)
	}
	return dst
}
