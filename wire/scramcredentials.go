package wire

// DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key
// 51), version 0 only, flexible from 0. From
// DescribeUserScramCredentialsRequest.json, ...Response.json,
// AlterUserScramCredentialsRequest.json and ...Response.json in apache/kafka:
//
//	"validVersions": "0", "flexibleVersions": "0+"
//	Describe request:  Users nullable []{Name string}
//	Describe response: ThrottleTimeMs int32, ErrorCode int16,
//	                   ErrorMessage nullable string,
//	                   Results []{User string, ErrorCode int16,
//	                     ErrorMessage nullable string,
//	                     CredentialInfos []{Mechanism int8, Iterations int32}}
//	Alter request:     Deletions []{Name string, Mechanism int8},
//	                   Upsertions []{Name string, Mechanism int8,
//	                     Iterations int32, Salt bytes, SaltedPassword bytes}
//	Alter response:    ThrottleTimeMs int32,
//	                   Results []{User string, ErrorCode int16,
//	                     ErrorMessage nullable string}
//
// Mechanism is ScramMechanism's type: 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512
// (0 = UNKNOWN). docs/design/security.md §8.

// scramCredentialsFlexible is the first flexible version of both APIs:
// "flexibleVersions": "0+".
const scramCredentialsFlexible int16 = 0

// DescribeUserScramCredentialsRequest is a DescribeUserScramCredentials
// request, v0. Names alias the frame.
type DescribeUserScramCredentialsRequest struct {
	// Users are the users to describe; nil (a null array) means every user.
	Users []string
}

// Decode parses a DescribeUserScramCredentials request body into r.
func (r *DescribeUserScramCredentialsRequest) Decode(body []byte, version int16) error {
	if version != 0 {
		return ErrUnsupportedVersion
	}
	rd := NewReader(body)
	n := rd.ArrayLen(true, 2)
	r.Users = resizeNullable(r.Users, n)
	for i := range r.Users {
		r.Users[i] = rd.CompactString()
		rd.SkipTags()
	}
	rd.SkipTags()
	return rd.Complete()
}

// DescribeUserScramCredentialsResponse is a DescribeUserScramCredentials
// response, v0.
type DescribeUserScramCredentialsResponse struct {
	// ThrottleMillis is the client throttle in milliseconds.
	ThrottleMillis int32
	// ErrorCode is the request-level error, or NoError.
	ErrorCode ErrorCode
	// ErrorMessage explains ErrorCode, or is null.
	ErrorMessage NullString
	// Results holds one entry per user.
	Results []DescribeUserScramCredentialsResult
}

// DescribeUserScramCredentialsResult is one user's credentials.
type DescribeUserScramCredentialsResult struct {
	// User is the user name.
	User string
	// ErrorCode is the user's error (RESOURCE_NOT_FOUND), or NoError.
	ErrorCode ErrorCode
	// ErrorMessage explains ErrorCode, or is null.
	ErrorMessage NullString
	// Credentials are the user's mechanisms and iteration counts.
	Credentials []ScramCredentialInfo
}

// ScramCredentialInfo is one mechanism of a user's SCRAM credentials.
type ScramCredentialInfo struct {
	// Mechanism is 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512).
	Mechanism int8
	// Iterations is the credential's iteration count.
	Iterations int32
}

// AppendTo appends the response body to dst.
func (r *DescribeUserScramCredentialsResponse) AppendTo(dst []byte, _ int16) []byte {
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendInt16(dst, int16(r.ErrorCode))
	dst = AppendCompactNullableString(dst, r.ErrorMessage.S, r.ErrorMessage.Valid)
	dst = AppendArrayLen(dst, true, len(r.Results))
	for i := range r.Results {
		u := &r.Results[i]
		dst = AppendCompactString(dst, u.User)
		dst = AppendInt16(dst, int16(u.ErrorCode))
		dst = AppendCompactNullableString(dst, u.ErrorMessage.S, u.ErrorMessage.Valid)
		dst = AppendArrayLen(dst, true, len(u.Credentials))
		for _, c := range u.Credentials {
			dst = AppendInt8(dst, c.Mechanism)
			dst = AppendInt32(dst, c.Iterations)
			dst = AppendEmptyTags(dst, true)
		}
		dst = AppendEmptyTags(dst, true)
	}
	return AppendEmptyTags(dst, true)
}

// AlterUserScramCredentialsRequest is an AlterUserScramCredentials request,
// v0. Names and byte fields alias the frame.
type AlterUserScramCredentialsRequest struct {
	// Deletions are the credentials to remove.
	Deletions []ScramCredentialDeletion
	// Upsertions are the credentials to add or replace.
	Upsertions []ScramCredentialUpsertion
}

// ScramCredentialDeletion removes one mechanism of a user's credentials.
type ScramCredentialDeletion struct {
	// Name is the user name.
	Name string
	// Mechanism is 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512).
	Mechanism int8
}

// ScramCredentialUpsertion sets one mechanism of a user's credentials. The
// client salts the password: the server never sees it.
type ScramCredentialUpsertion struct {
	// Name is the user name.
	Name string
	// Mechanism is 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512).
	Mechanism int8
	// Iterations is the PBKDF2 iteration count of SaltedPassword.
	Iterations int32
	// Salt is the random salt the client chose.
	Salt []byte
	// SaltedPassword is Hi(password, Salt, Iterations) (RFC 5802 section 2.2).
	SaltedPassword []byte
}

// Decode parses an AlterUserScramCredentials request body into r.
func (r *AlterUserScramCredentialsRequest) Decode(body []byte, version int16) error {
	if version != 0 {
		return ErrUnsupportedVersion
	}
	rd := NewReader(body)
	r.Deletions = resize(r.Deletions, arrayLen(&rd, true, 3))
	for i := range r.Deletions {
		d := &r.Deletions[i]
		d.Name = rd.CompactString()
		d.Mechanism = rd.Int8()
		rd.SkipTags()
	}
	r.Upsertions = resize(r.Upsertions, arrayLen(&rd, true, 10))
	for i := range r.Upsertions {
		u := &r.Upsertions[i]
		u.Name = rd.CompactString()
		u.Mechanism = rd.Int8()
		u.Iterations = rd.Int32()
		u.Salt = rd.CompactBytes()
		u.SaltedPassword = rd.CompactBytes()
		rd.SkipTags()
	}
	rd.SkipTags()
	return rd.Complete()
}

// AlterUserScramCredentialsResponse is an AlterUserScramCredentials
// response, v0.
type AlterUserScramCredentialsResponse struct {
	// ThrottleMillis is the client throttle in milliseconds.
	ThrottleMillis int32
	// Results holds one entry per user named in the request.
	Results []AlterUserScramCredentialsResult
}

// AlterUserScramCredentialsResult is one user's outcome.
type AlterUserScramCredentialsResult struct {
	// User is the user name.
	User string
	// ErrorCode is the user's error, or NoError.
	ErrorCode ErrorCode
	// ErrorMessage explains ErrorCode, or is null.
	ErrorMessage NullString
}

// AppendTo appends the response body to dst.
func (r *AlterUserScramCredentialsResponse) AppendTo(dst []byte, _ int16) []byte {
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, true, len(r.Results))
	for i := range r.Results {
		u := &r.Results[i]
		dst = AppendCompactString(dst, u.User)
		dst = AppendInt16(dst, int16(u.ErrorCode))
		dst = AppendCompactNullableString(dst, u.ErrorMessage.S, u.ErrorMessage.Valid)
		dst = AppendEmptyTags(dst, true)
	}
	return AppendEmptyTags(dst, true)
}

// CountErrors reports r's error codes to c.
func (r *DescribeUserScramCredentialsResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Results {
		countError(c, r.Results[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *AlterUserScramCredentialsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Results {
		countError(c, r.Results[i].ErrorCode)
	}
}
