package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
)

func TestSASLOptions(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("# c\nalice:secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) (saslOptions, error) {
		var o options
		s := newSettings("kiggy")
		registerOptions(s, &o)
		return o.sasl, s.parse(args, nil)
	}
	o, err := parse("--sasl-plain-users-file", users, "--sasl-scram-bootstrap-users-file", users)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.bridgeConfig()
	if err != nil || cfg.Plain == nil || !cfg.Scram || cfg.ScramBootstrap["alice"] != "secret" || cfg.OAuth != nil {
		t.Fatalf("%+v %v", cfg, err)
	}
	if cfg.FailedAuthenticationDelay != bridge.DefaultFailedAuthenticationDelay {
		t.Errorf("default failed authentication delay %v, want %v", cfg.FailedAuthenticationDelay, bridge.DefaultFailedAuthenticationDelay)
	}
	for arg, want := range map[string]time.Duration{"0": -1, "250ms": 250 * time.Millisecond} {
		o, _ := parse("--connection-failed-authentication-delay", arg)
		if cfg, err := o.bridgeConfig(); err != nil || cfg.FailedAuthenticationDelay != want {
			t.Errorf("--connection-failed-authentication-delay %s: %v %v, want %v", arg, cfg.FailedAuthenticationDelay, err, want)
		}
	}
	o, _ = parse("--sasl-enabled-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512", "--sasl-plain-users-file", users)
	if cfg, err := o.bridgeConfig(); err != nil || cfg.Plain != nil || !cfg.Scram {
		t.Errorf("SCRAM only: %+v %v", cfg, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sasl-enabled-mechanisms", "GSSAPI"}, "unknown mechanism"},
		{[]string{"--sasl-enabled-mechanisms", "PLAIN"}, "needs --sasl-plain-users-file"},
		{[]string{"--sasl-enabled-mechanisms", "OAUTHBEARER"}, "needs --sasl-oauthbearer-jwks-file"},
		{[]string{"--sasl-enabled-mechanisms", "SCRAM-SHA-256"}, "go together"},
		{[]string{"--sasl-plain-users-file", filepath.Join(dir, "none")}, "--sasl-plain-users-file"},
		{[]string{"--sasl-oauthbearer-jwks-file", users}, "--sasl-oauthbearer-jwks-file"},
		{[]string{"--sasl-plain-verifier", "ldap"}, "want file or iggy"},
		{[]string{"--sasl-plain-verifier", "iggy", "--sasl-plain-users-file", users}, "drop --sasl-plain-users-file"},
	} {
		o, err := parse(tc.args...)
		if err == nil {
			_, err = o.bridgeConfig()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}

// TestSASLPlainVerifierIggy: --sasl-plain-verifier iggy offers PLAIN, waits
// for the Iggy backend to be open, and refuses any other backend.
func TestSASLPlainVerifierIggy(t *testing.T) {
	var o options
	s := newSettings("kiggy")
	registerOptions(s, &o)
	if err := s.parse([]string{"--sasl-plain-verifier", "iggy"}, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.sasl.bridgeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, pending := cfg.Plain.(pendingIggyPlain); !pending || !cfg.Scram {
		t.Fatalf("PLAIN %T, SCRAM %v: want the pending Iggy verifier and SCRAM", cfg.Plain, cfg.Scram)
	}
	if err := o.sasl.plainAgainstIggy(&cfg, nil); err == nil || !strings.Contains(err.Error(), "needs the Iggy backend") {
		t.Errorf("on the embedded log: %v", err)
	}
	if code := run([]string{"--sasl-plain-verifier", "iggy"}, nil); code != 2 {
		t.Errorf("without --iggy-addr: exit %d, want 2", code)
	}
}
