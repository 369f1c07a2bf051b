package wire

// SaslHandshake (key 17) and SaslAuthenticate (key 36). From
// SaslHandshakeRequest.json, SaslHandshakeResponse.json,
// SaslAuthenticateRequest.json and SaslAuthenticateResponse.json in
// apache/kafka:
//
//	SaslHandshake:    "validVersions": "0-1", "flexibleVersions": "none"
//	  request:  Mechanism string (0+)
//	  response: ErrorCode int16 (0+), Mechanisms []string (0+)
//	  "Version 1 supports SASL_AUTHENTICATE."
//	SaslAuthenticate: "validVersions": "0-2", "flexibleVersions": "2+"
//	  request:  AuthBytes bytes (0+)
//	  response: ErrorCode int16 (0+), ErrorMessage nullable string (0+),
//	            AuthBytes bytes (0+), SessionLifetimeMs int64 (1+)
//	  "Version 1 adds the session lifetime."
//
// docs/design/security.md §7 says how the gateway uses them. The gateway
// decodes the requests and encodes the responses; internal/kclient, which
// authenticates one kiggy instance to another, encodes the requests and
// decodes the responses.

// saslAuthenticateFlexible is the first flexible SaslAuthenticate version:
// "flexibleVersions": "2+".
const saslAuthenticateFlexible int16 = 2

// saslHandshakeFlexible: SaslHandshake is never flexible ("flexibleVersions":
// "none"); a version it never reaches.
const saslHandshakeFlexible int16 = 2

// SaslHandshakeRequest is a SaslHandshake request, v0–1. Mechanism aliases
// the frame.
type SaslHandshakeRequest struct {
	// Mechanism is the SASL mechanism the client chose ("PLAIN").
	Mechanism string
}

// Decode parses a SaslHandshake request body of the given version into r.
func (r *SaslHandshakeRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 1 {
		return ErrUnsupportedVersion
	}
	rd := NewReader(body)
	r.Mechanism = rd.String()
	return rd.Complete()
}

// AppendTo appends r encoded at version (a client's view: internal/kclient).
func (r *SaslHandshakeRequest) AppendTo(dst []byte, _ int16) []byte {
	return AppendString(dst, r.Mechanism)
}

// SaslHandshakeResponse is a SaslHandshake response, v0–1.
type SaslHandshakeResponse struct {
	// ErrorCode is NoError, UNSUPPORTED_SASL_MECHANISM or ILLEGAL_SASL_STATE.
	ErrorCode ErrorCode
	// Mechanisms are the mechanisms the server enables.
	Mechanisms []string
}

// AppendTo appends the response body at the given version to dst.
func (r *SaslHandshakeResponse) AppendTo(dst []byte, _ int16) []byte {
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendArrayLen(dst, false, len(r.Mechanisms))
	for _, m := range r.Mechanisms {
		dst = AppendString(dst, m)
	}
	return dst
}

// Decode parses a SaslHandshake response body of the given version into r
// (a client's view: internal/kclient), reusing r.Mechanisms' capacity. The
// mechanisms alias body.
func (r *SaslHandshakeResponse) Decode(body []byte, version int16) error {
	if version < 0 || version > 1 {
		return ErrUnsupportedVersion
	}
	rd := NewReader(body)
	r.ErrorCode = ErrorCode(rd.Int16())
	r.Mechanisms = strs(&rd, false, false, r.Mechanisms)
	return rd.Complete()
}

// SaslAuthenticateRequest is a SaslAuthenticate request, v0–2. AuthBytes
// aliases the frame.
type SaslAuthenticateRequest struct {
	// AuthBytes is the client's SASL message.
	AuthBytes []byte
}

// Decode parses a SaslAuthenticate request body of the given version into r.
func (r *SaslAuthenticateRequest) Decode(body []byte, version int16) error {
	if version < 0 || version > 2 {
		return ErrUnsupportedVersion
	}
	flex := version >= saslAuthenticateFlexible
	rd := NewReader(body)
	r.AuthBytes = rd.ByteSlice(flex)
	if flex {
		rd.SkipTags()
	}
	return rd.Complete()
}

// AppendTo appends r encoded at version (a client's view: internal/kclient).
func (r *SaslAuthenticateRequest) AppendTo(dst []byte, version int16) []byte {
	flex := version >= saslAuthenticateFlexible
	auth := r.AuthBytes
	if auth == nil {
		auth = []byte{}
	}
	dst = AppendByteSlice(dst, flex, auth)
	return AppendEmptyTags(dst, flex)
}

// SaslAuthenticateResponse is a SaslAuthenticate response, v0–2.
type SaslAuthenticateResponse struct {
	// ErrorCode is NoError or SASL_AUTHENTICATION_FAILED.
	ErrorCode ErrorCode
	// ErrorMessage explains a failure, or is null.
	ErrorMessage NullString
	// AuthBytes is the server's SASL message.
	AuthBytes []byte
	// SessionLifetimeMillis (v1+) is how long the session may last before
	// the client must re-authenticate (KIP-368); 0 = unbounded.
	SessionLifetimeMillis int64
}

// AppendTo appends the response body at the given version to dst.
func (r *SaslAuthenticateResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= saslAuthenticateFlexible
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendNullableStr(dst, flex, r.ErrorMessage.S, r.ErrorMessage.Valid)
	auth := r.AuthBytes
	if auth == nil {
		auth = []byte{}
	}
	dst = AppendByteSlice(dst, flex, auth)
	if version >= 1 {
		dst = AppendInt64(dst, r.SessionLifetimeMillis)
	}
	return AppendEmptyTags(dst, flex)
}

// Decode parses a SaslAuthenticate response body of the given version into
// r (a client's view: internal/kclient). ErrorMessage and AuthBytes alias
// body.
func (r *SaslAuthenticateResponse) Decode(body []byte, version int16) error {
	if version < 0 || version > 2 {
		return ErrUnsupportedVersion
	}
	flex := version >= saslAuthenticateFlexible
	rd := NewReader(body)
	r.ErrorCode = ErrorCode(rd.Int16())
	r.ErrorMessage = nullStr(&rd, flex)
	r.AuthBytes = rd.ByteSlice(flex)
	r.SessionLifetimeMillis = 0
	if version >= 1 {
		r.SessionLifetimeMillis = rd.Int64()
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// CountErrors reports r's error code to c.
func (r *SaslHandshakeResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error code to c.
func (r *SaslAuthenticateResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
