// Package security holds the types the listeners, SASL and the authorizer
// share: who a connection is (Principal). docs/design/security.md says how
// the pieces fit.
package security

import (
	"errors"
	"strings"
)

// Principal is who a connection acts as, in Kafka's "Type:Name" form
// (KafkaPrincipal: "User:alice"). Connections that have not authenticated,
// and every connection on a PLAINTEXT listener, are Anonymous.
type Principal struct {
	// Type is the principal type; Kafka's only built-in type is "User".
	Type string
	// Name is the user name (a SASL user, a certificate's mapped subject).
	Name string
}

// UserType is Kafka's principal type for users (KafkaPrincipal.USER_TYPE).
const UserType = "User"

// Anonymous is the principal of an unauthenticated connection (Kafka's
// KafkaPrincipal.ANONYMOUS, "User:ANONYMOUS").
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// User returns the User principal called name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// String returns "Type:Name", the form ACLs and logs use.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// IsZero reports whether p is the zero Principal (not set).
func (p Principal) IsZero() bool { return p.Type == "" && p.Name == "" }

// ErrBadPrincipal is returned by ParsePrincipal for text that is not
// "Type:Name" with both parts non-empty.
var ErrBadPrincipal = errors.New("security: principal must be Type:Name")

// ParsePrincipal reads "Type:Name" (Kafka's SecurityUtils.parseKafkaPrincipal:
// split at the first ':').
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" || name == "" {
		return Principal{}, ErrBadPrincipal
	}
	return Principal{Type: typ, Name: name}, nil
}

// Protocol is a listener's security protocol, as Kafka names them
// (SecurityProtocol: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
type Protocol uint8

// The security protocols. The zero value is Plaintext.
const (
	Plaintext Protocol = iota
	SSL
	SASLPlaintext
	SASLSSL
)

var protocolNames = [...]string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// String returns Kafka's name of the protocol.
func (p Protocol) String() string {
	if int(p) < len(protocolNames) {
		return protocolNames[p]
	}
	return "UNKNOWN"
}

// TLS reports whether connections of the protocol are TLS (SSL, SASL_SSL).
func (p Protocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether connections of the protocol authenticate with SASL
// before any other request (SASL_PLAINTEXT, SASL_SSL).
func (p Protocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// ErrUnknownProtocol is returned by ParseProtocol for a name Kafka does not
// define.
var ErrUnknownProtocol = errors.New("security: protocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")

// ParseProtocol reads Kafka's name of a security protocol (case-insensitive,
// as Kafka's SecurityProtocol.forName).
func ParseProtocol(s string) (Protocol, error) {
	for i, n := range protocolNames {
		if strings.EqualFold(s, n) {
			return Protocol(i), nil
		}
	}
	return 0, ErrUnknownProtocol
}
