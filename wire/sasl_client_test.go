package wire

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The client side of SaslHandshake and SaslAuthenticate (internal/kclient):
// our requests are kmsg's bytes, and kmsg-encoded responses (with unknown
// tags when flexible) decode to kmsg's values, truncated ones to an error.

func TestSaslClientRequestsMatchKmsg(t *testing.T) {
	g := newOracleGen(0x5a51)
	for v := int16(0); v <= 1; v++ {
		for range 20 {
			r := SaslHandshakeRequest{Mechanism: g.str()}
			k := kmsg.NewPtrSASLHandshakeRequest()
			k.Version, k.Mechanism = v, r.Mechanism
			if got, want := r.AppendTo([]byte("x"), v)[1:], k.AppendTo(nil); !bytes.Equal(got, want) {
				t.Fatalf("SaslHandshake v%d:\n got %x\nwant %x", v, got, want)
			}
		}
	}
	for v := int16(0); v <= 2; v++ {
		for _, auth := range [][]byte{nil, {}, []byte("\x00user\x00pass"), g.bytes()} {
			r := SaslAuthenticateRequest{AuthBytes: auth}
			k := kmsg.NewPtrSASLAuthenticateRequest()
			k.Version, k.SASLAuthBytes = v, auth
			if k.SASLAuthBytes == nil {
				k.SASLAuthBytes = []byte{}
			}
			if got, want := r.AppendTo([]byte("x"), v)[1:], k.AppendTo(nil); !bytes.Equal(got, want) {
				t.Fatalf("SaslAuthenticate v%d:\n got %x\nwant %x", v, got, want)
			}
		}
	}
}

func TestSaslClientResponsesDecodeKmsg(t *testing.T) {
	g := newOracleGen(0x5a52)
	var hs SaslHandshakeResponse
	for v := int16(0); v <= 1; v++ {
		for i := range 50 {
			k := kmsg.NewPtrSASLHandshakeResponse()
			k.Version, k.ErrorCode, k.SupportedMechanisms = v, int16(g.code()), g.strs(g.nOuter())
			body := k.AppendTo(nil)
			if err := hs.Decode(body, v); err != nil {
				t.Fatalf("SaslHandshake v%d #%d: %v", v, i, err)
			}
			back := kmsg.NewPtrSASLHandshakeResponse()
			back.Version, back.ErrorCode = v, int16(hs.ErrorCode)
			back.SupportedMechanisms = append([]string(nil), hs.Mechanisms...)
			if len(back.SupportedMechanisms) == 0 {
				back.SupportedMechanisms = nil
			}
			if len(k.SupportedMechanisms) == 0 {
				k.SupportedMechanisms = nil
			}
			admCheckEqual(t, "SaslHandshake response", back, k)
			saslClientTruncated(t, body, func(b []byte) error { return hs.Decode(b, v) })
		}
	}
	var au SaslAuthenticateResponse
	for v := int16(0); v <= 2; v++ {
		for i := range 50 {
			k := kmsg.NewPtrSASLAuthenticateResponse()
			k.Version, k.ErrorCode, k.ErrorMessage, k.SASLAuthBytes = v, int16(g.code()), g.ptr(), g.bytes()
			if v >= 1 {
				k.SessionLifetimeMillis = g.i64()
			}
			k.UnknownTags = g.tagsIf(v >= 2)
			body := k.AppendTo(nil)
			if err := au.Decode(body, v); err != nil {
				t.Fatalf("SaslAuthenticate v%d #%d: %v", v, i, err)
			}
			want := kmsg.NewPtrSASLAuthenticateResponse()
			want.Version = v
			if err := want.ReadFrom(body); err != nil {
				t.Fatal(err)
			}
			admStripTags(want)
			back := kmsg.NewPtrSASLAuthenticateResponse()
			back.Version, back.ErrorCode, back.SessionLifetimeMillis = v, int16(au.ErrorCode), au.SessionLifetimeMillis
			if au.ErrorMessage.Valid {
				back.ErrorMessage = &au.ErrorMessage.S
			}
			back.SASLAuthBytes = append([]byte{}, au.AuthBytes...)
			want.SASLAuthBytes = append([]byte{}, want.SASLAuthBytes...)
			admCheckEqual(t, "SaslAuthenticate response", back, want)
			saslClientTruncated(t, body, func(b []byte) error { return au.Decode(b, v) })
		}
	}
	if hs.Decode(nil, 2) != ErrUnsupportedVersion || au.Decode(nil, 3) != ErrUnsupportedVersion {
		t.Error("unsupported versions accepted")
	}
}

// saslClientTruncated: every cut of body, and body with a trailing byte,
// fails to decode.
func saslClientTruncated(t *testing.T, body []byte, decode func([]byte) error) {
	t.Helper()
	for cut := range len(body) {
		if decode(body[:cut]) == nil {
			t.Fatalf("body cut to %d of %d bytes decoded", cut, len(body))
		}
	}
	if decode(append(body[:len(body):len(body)], 0)) == nil {
		t.Fatal("body with a trailing byte decoded")
	}
}
