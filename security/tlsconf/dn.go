package tlsconf

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf16"
)

// The subject of a client certificate as Kafka sees it: Java's
// X500Principal.getName() in RFC 2253 form (docs/design/security.md §5).
// Go's pkix.Name.String() reorders attributes and names others than Java
// does, so the DN is formatted here from the certificate's raw subject.

// attribute is one AttributeTypeAndValue with its value kept as DER, so a
// value that is not a string can be printed as #hex like Java does.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one RelativeDistinguishedName (encoding/asn1 reads a slice
// type whose name ends in SET as a SET OF).
type rdnSET []attribute

// rfc2253Keywords are the attribute types Java prints by keyword in RFC
// 2253 form (the keywords of RFC 2253 plus DC and UID; docs/design/security.md
// §5); every other type is printed as
// its dotted OID with a #hex value.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// errBadSubject is returned for a subject that is not a DER RDNSequence.
var errBadSubject = errors.New("tlsconf: certificate subject is not a valid distinguished name")

// SubjectDN returns the certificate's subject distinguished name as Kafka's
// DEFAULT principal mapping gives it: RFC 2253 form, last RDN first,
// attributes of a multi-valued RDN joined by '+', the RFC 2253 special
// characters escaped with a backslash, and attribute types without an RFC
// 2253 keyword (emailAddress, serialNumber) as OID=#hex.
func SubjectDN(cert *x509.Certificate) (string, error) {
	return formatDN(cert.RawSubject)
}

func formatDN(raw []byte) (string, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(raw, &seq)
	if err != nil || len(rest) != 0 {
		return "", errBadSubject
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i != len(seq)-1 {
			b.WriteByte(',')
		}
		for j, a := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, a)
		}
	}
	return b.String(), nil
}

func writeAttribute(b *strings.Builder, a attribute) {
	oid := a.Type.String()
	kw, ok := rfc2253Keywords[oid]
	s, isString := derString(a.Value)
	if !ok || !isString {
		if ok {
			b.WriteString(kw)
		} else {
			b.WriteString(oid)
		}
		b.WriteString("=#")
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return
	}
	b.WriteString(kw)
	b.WriteByte('=')
	writeValue(b, s)
}

// derString decodes the directory string types Java prints as text:
// UTF8String (12), PrintableString (19), TeletexString (20), IA5String (22),
// GeneralString (27) and BMPString (30).
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return "", false
	}
	switch v.Tag {
	case 12:
		return string(v.Bytes), true
	case 19, 20, 22, 27:
		// ISO 8859-1: each byte is one code point.
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case 30:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// writeValue escapes an attribute value as Java's RFC 2253 form does: the
// characters ,=+<>#;"\ get a backslash wherever they are, NUL becomes \00,
// and leading and trailing spaces (and carriage returns) get a backslash.
func writeValue(b *strings.Builder, s string) {
	var esc []rune
	for _, c := range s {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, c):
			esc = append(esc, '\\', c)
		case c == 0:
			esc = append(esc, '\\', '0', '0')
		default:
			esc = append(esc, c)
		}
	}
	lead := 0
	for lead < len(esc) && (esc[lead] == ' ' || esc[lead] == '\r') {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && (esc[trail] == ' ' || esc[trail] == '\r') {
		trail--
	}
	for i, c := range esc {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
}
