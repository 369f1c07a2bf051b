package scram

import (
	"context"
	"errors"
	"testing"

	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// exchange runs franz-go's SCRAM client against our server.
func exchange(t *testing.T, m Mechanism, creds map[string]Credential, user, pass string) error {
	t.Helper()
	auth := kscram.Auth{User: user, Pass: pass}
	mech := auth.AsSha256Mechanism()
	if m == SHA512 {
		mech = auth.AsSha512Mechanism()
	}
	sess, msg, err := mech.Authenticate(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(m, func(u string) (Credential, bool, error) { c, ok := creds[u]; return c, ok, nil })
	for range 3 {
		reply, done, err := srv.Step(msg)
		if err != nil {
			return err
		}
		cdone, next, cerr := sess.Challenge(reply)
		if cerr != nil {
			t.Fatalf("client refused the server's message %q: %v", reply, cerr)
		}
		if done {
			if !cdone {
				t.Fatal("server done, client not")
			}
			if srv.User() != user {
				t.Fatalf("user %q", srv.User())
			}
			return nil
		}
		msg = next
	}
	t.Fatal("exchange did not end")
	return nil
}

func TestScramWithFranzGo(t *testing.T) {
	for _, m := range Mechanisms {
		creds := map[string]Credential{"alice": FromPassword(m, "secret", MinIterations), "a,b=c": FromPassword(m, "x", MinIterations)}
		if err := exchange(t, m, creds, "alice", "secret"); err != nil {
			t.Errorf("%v: good password: %v", m, err)
		}
		if err := exchange(t, m, creds, "a,b=c", "x"); err != nil {
			t.Errorf("%v: escaped name: %v", m, err)
		}
		if err := exchange(t, m, creds, "alice", "wrong"); !errors.Is(err, ErrBadProof) {
			t.Errorf("%v: wrong password: %v", m, err)
		}
		if err := exchange(t, m, creds, "bob", "secret"); !errors.Is(err, ErrBadProof) {
			t.Errorf("%v: unknown user: %v", m, err)
		}
	}
}

// TestRFC7677Vector checks the SCRAM-SHA-256 example of RFC 7677 section 3, with
// the server nonce of the example.
func TestRFC7677Vector(t *testing.T) {
	salt, _ := b64.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred := FromSaltedPassword(SHA256, SaltPassword(SHA256, "pencil", salt, 4096), salt, 4096)
	srv := NewServer(SHA256, func(string) (Credential, bool, error) { return cred, true, nil })
	if _, _, err := srv.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")); err != nil {
		t.Fatal(err)
	}
	// Replace the random server nonce with the example's.
	srv.nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	srv.sfirst = "r=" + srv.nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	reply, done, err := srv.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done || string(reply) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("%q %v %v", reply, done, err)
	}
}

func TestParseClientFirst(t *testing.T) {
	for _, tc := range []struct {
		in   string
		user string
		err  error
	}{
		{"n,,n=alice,r=abc", "alice", nil},
		{"y,,n=alice,r=abc", "alice", nil},
		{"n,a=alice,n=alice,r=abc,tokenauth=false", "alice", nil},
		{"n,,n=a=2Cb=3Dc,r=abc", "a,b=c", nil},
		{"p=tls-unique,,n=alice,r=abc", "", ErrChannelBinding},
		{"n,,m=x,n=alice,r=abc", "", ErrMalformed},
		{"n,,n=a=zz,r=abc", "", ErrMalformed},
		{"n,,n=,r=abc", "", ErrMalformed},
		{"n,,n=alice,r=", "", ErrMalformed},
		{"n,,n=alice", "", ErrMalformed},
		{"n,,r=abc,n=alice", "", ErrMalformed},
		{"x,,n=alice,r=abc", "", ErrMalformed},
		{"n,,n=alice,r=abc,bad", "", ErrMalformed},
		{"", "", ErrMalformed},
	} {
		cf, err := ParseClientFirst([]byte(tc.in))
		if !errors.Is(err, tc.err) || (err == nil && cf.User != tc.user) {
			t.Errorf("%q: %+v %v", tc.in, cf, err)
		}
	}
}

func TestCredentialEncoding(t *testing.T) {
	c := FromPassword(SHA512, "pw", 8192)
	d, err := Decode(c.Encode())
	if err != nil || d.Iterations != 8192 || string(d.StoredKey) != string(c.StoredKey) || string(d.Salt) != string(c.Salt) {
		t.Fatalf("%+v %v", d, err)
	}
	for _, bad := range []string{"", "salt=x", "salt=,stored_key=,server_key=,iterations=1", "salt=AA==,stored_key=AA==,server_key=AA==,iterations=x"} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzClientFirst(f *testing.F) {
	for _, s := range []string{"n,,n=alice,r=abc", "n,a=x,n=a=2C,r=abc,tokenauth=true", "p=x,,", "y,,m=a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cf, err := ParseClientFirst(b)
		if err == nil && (cf.User == "" || cf.Nonce == "" || cf.GS2Header+cf.Bare != string(b)) {
			t.Fatalf("%q: %+v", b, cf)
		}
	})
}

func FuzzClientFinal(f *testing.F) {
	for _, s := range []string{"c=biws,r=abc,p=AAAA", "c=,r=x,e=1,p=", "p=AA=="} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cf, err := ParseClientFinal(b)
		if err == nil && (len(cf.Proof) == 0 || cf.Nonce == "") {
			t.Fatalf("%q: %+v", b, cf)
		}
		// A whole exchange on fuzzed messages must fail cleanly.
		cred := FromSaltedPassword(SHA256, make([]byte, 32), []byte("salt"), MinIterations)
		srv := NewServer(SHA256, func(string) (Credential, bool, error) { return cred, true, nil })
		if _, _, err := srv.Step([]byte("n,,n=u,r=abc")); err != nil {
			t.Fatal(err)
		}
		if _, done, _ := srv.Step(b); done {
			t.Fatalf("%q authenticated", b)
		}
	})
}
