// Package scram is the server side of SCRAM-SHA-256 and SCRAM-SHA-512
// (RFC 5802, RFC 7677) with Kafka's extensions (KIP-84, KIP-48's tokenauth),
// and the salted credentials kiggy stores for it. docs/design/security.md §8
// says what is stored and how a client is checked.
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// Mechanism is a SCRAM mechanism, numbered as Kafka's ScramMechanism (the
// int8 of DescribeUserScramCredentials and AlterUserScramCredentials).
type Mechanism int8

// The mechanisms. Unknown is 0, as in Kafka.
const (
	Unknown Mechanism = 0
	SHA256  Mechanism = 1
	SHA512  Mechanism = 2
)

// Kafka's bounds on a credential's iteration count (ScramMechanism's
// minIterations 4096 and the controller's 16384 maximum).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// Mechanisms lists the supported mechanisms.
var Mechanisms = []Mechanism{SHA256, SHA512}

// Name returns the SASL name of m ("SCRAM-SHA-256"), or "UNKNOWN".
func (m Mechanism) Name() string {
	switch m {
	case SHA256:
		return "SCRAM-SHA-256"
	case SHA512:
		return "SCRAM-SHA-512"
	}
	return "UNKNOWN"
}

// String returns m's SASL name.
func (m Mechanism) String() string { return m.Name() }

// Valid reports whether m is SHA256 or SHA512.
func (m Mechanism) Valid() bool { return m == SHA256 || m == SHA512 }

// ParseMechanism maps a SASL name to its mechanism (Unknown when none).
func ParseMechanism(name string) Mechanism {
	for _, m := range Mechanisms {
		if m.Name() == name {
			return m
		}
	}
	return Unknown
}

func (m Mechanism) hash() func() hash.Hash {
	if m == SHA512 {
		return sha512.New
	}
	return sha256.New
}

// Size is the digest size of m's hash (32 or 64 bytes).
func (m Mechanism) Size() int {
	if m == SHA512 {
		return sha512.Size
	}
	return sha256.Size
}

func (m Mechanism) hmac(key []byte, parts ...string) []byte {
	h := hmac.New(m.hash(), key)
	for _, p := range parts {
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

func (m Mechanism) digest(b []byte) []byte {
	h := m.hash()()
	h.Write(b)
	return h.Sum(nil)
}

// Credential is what the server keeps for one user and mechanism (RFC 5802
// section 3): never the password, nor the salted password.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// FromSaltedPassword derives the stored credential from SaltedPassword =
// Hi(password, salt, iterations), the form AlterUserScramCredentials sends:
// ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey),
// ServerKey = HMAC(SaltedPassword, "Server Key") (RFC 5802 section 3).
func FromSaltedPassword(m Mechanism, salted, salt []byte, iterations int) Credential {
	clientKey := m.hmac(salted, "Client Key")
	return Credential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  m.digest(clientKey),
		ServerKey:  m.hmac(salted, "Server Key"),
		Iterations: iterations,
	}
}

// SaltPassword computes Hi(password, salt, iterations), PBKDF2 with m's HMAC
// (RFC 5802 section 2.2).
func SaltPassword(m Mechanism, password string, salt []byte, iterations int) []byte {
	k, err := pbkdf2.Key(m.hash(), password, salt, iterations, m.Size())
	if err != nil {
		panic(err) // only for key lengths FIPS refuses; ours are the digest size
	}
	return k
}

// FromPassword salts password with a fresh random salt.
func FromPassword(m Mechanism, password string, iterations int) Credential {
	salt := make([]byte, 32)
	rand.Read(salt)
	return FromSaltedPassword(m, SaltPassword(m, password, salt, iterations), salt, iterations)
}

var b64 = base64.StdEncoding

// Encode returns c in Kafka's text form (ScramCredentialUtils):
// "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>".
func (c Credential) Encode() []byte {
	return fmt.Appendf(nil, "salt=%s,stored_key=%s,server_key=%s,iterations=%d",
		b64.EncodeToString(c.Salt), b64.EncodeToString(c.StoredKey), b64.EncodeToString(c.ServerKey), c.Iterations)
}

// ErrBadCredential is returned by Decode for text not in Encode's form.
var ErrBadCredential = errors.New("scram: malformed stored credential")

// Decode parses Encode's text.
func Decode(b []byte) (Credential, error) {
	var c Credential
	seen := 0
	for f := range strings.SplitSeq(string(b), ",") {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return Credential{}, ErrBadCredential
		}
		var err error
		switch k {
		case "salt":
			c.Salt, err = b64.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = b64.DecodeString(v)
		case "server_key":
			c.ServerKey, err = b64.DecodeString(v)
		case "iterations":
			c.Iterations, err = strconv.Atoi(v)
		default:
			continue
		}
		if err != nil {
			return Credential{}, ErrBadCredential
		}
		seen++
	}
	if seen != 4 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 || c.Iterations <= 0 {
		return Credential{}, ErrBadCredential
	}
	return c, nil
}
