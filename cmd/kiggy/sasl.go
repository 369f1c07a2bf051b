package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/sasl"
)

// saslOptions are the SASL knobs (docs/design/security.md §7).
type saslOptions struct {
	mechanisms         string
	plainUsersFile     string
	plainVerifier      string
	plainCacheTTL      time.Duration
	scramBootstrapFile string
	handshakeTimeout   time.Duration
	maxReauth          time.Duration
	failedAuthDelay    time.Duration
	maxReceiveSize     int64
	oauthJWKSFile      string
	oauthIssuer        string
	oauthAudience      string
	oauthSubClaim      string
	oauthClockSkew     time.Duration
}

func registerSASLOptions(s *settings, o *saslOptions) {
	s.String("SASL", "sasl-enabled-mechanisms", &o.mechanisms, "", "comma-separated SASL mechanisms offered (Kafka sasl.enabled.mechanisms); empty = every configured one: PLAIN with --sasl-plain-users-file, SCRAM-SHA-256 and SCRAM-SHA-512, OAUTHBEARER with --sasl-oauthbearer-jwks-file")
	s.String("SASL", "sasl-plain-users-file", &o.plainUsersFile, "", "PLAIN credentials: lines user:password or user:$pbkdf2-sha256$iterations$salt$hash (docs/design/security.md §7)")
	s.String("SASL", "sasl-plain-verifier", &o.plainVerifier, "file", "what PLAIN passwords are checked against: file (--sasl-plain-users-file) or iggy (a login as that Iggy user on the Iggy backend; successes remembered for --sasl-plain-cache-ttl)")
	s.Duration("SASL", "sasl-plain-cache-ttl", &o.plainCacheTTL, time.Minute, 0, 24*time.Hour, "with --sasl-plain-verifier iggy: how long a successful login is remembered (a password removed in Iggy still works here until then); 0 = log in every time")
	s.String("SASL", "sasl-scram-bootstrap-users-file", &o.scramBootstrapFile, "", "lines user:password; at start each user without SCRAM credentials gets SCRAM-SHA-256 and SCRAM-SHA-512 ones (4096 iterations), like kafka-storage format --add-scram")
	s.Duration("SASL", "sasl-handshake-timeout", &o.handshakeTimeout, bridge.DefaultSASLHandshakeTimeout, 100*time.Millisecond, time.Hour, "a connection of a SASL listener not authenticated this long after it connected is closed")
	s.Duration("SASL", "connections-max-reauth", &o.maxReauth, 0, 0, 365*24*time.Hour, "SASL session lifetime; clients re-authenticate before it ends or are disconnected (Kafka connections.max.reauth.ms, KIP-368); 0 = off")
	s.Duration("SASL", "connection-failed-authentication-delay", &o.failedAuthDelay, bridge.DefaultFailedAuthenticationDelay, 0, time.Minute, "a failed SASL authentication is answered and its connection closed this long after, nothing read from it meanwhile, which slows down password guessing and clients reconnecting in a loop (Kafka connection.failed.authentication.delay.ms, KIP-306); 0 = at once")
	s.Int("SASL", "sasl-server-max-receive-size", &o.maxReceiveSize, bridge.DefaultSASLServerMaxReceiveSize, 1<<10, 1<<30, "largest request frame in bytes a connection of a SASL listener may send before it authenticates; a larger one closes it before its bytes are read (Kafka sasl.server.max.receive.size)")
	s.String("SASL", "sasl-oauthbearer-jwks-file", &o.oauthJWKSFile, "", "JSON Web Key Set (RSA and P-256 keys) that signs OAUTHBEARER tokens; enables OAUTHBEARER")
	s.String("SASL", "sasl-oauthbearer-expected-issuer", &o.oauthIssuer, "", "the iss claim OAUTHBEARER tokens must carry (empty = not checked)")
	s.String("SASL", "sasl-oauthbearer-expected-audience", &o.oauthAudience, "", "comma-separated audiences; a token's aud must hold one (empty = not checked)")
	s.String("SASL", "sasl-oauthbearer-sub-claim-name", &o.oauthSubClaim, "sub", "the token claim that names the principal (Kafka sasl.oauthbearer.sub.claim.name)")
	s.Duration("SASL", "sasl-oauthbearer-clock-skew", &o.oauthClockSkew, 30*time.Second, 0, time.Hour, "tolerance on a token's exp, nbf and iat (Kafka sasl.oauthbearer.clock.skew.seconds)")
}

// bridgeConfig turns the SASL knobs into the gateway's SASLConfig. Which
// listeners authenticate with SASL is --listeners' business
// (SASL_PLAINTEXT and SASL_SSL ones).
func (o *saslOptions) bridgeConfig() (bridge.SASLConfig, error) {
	var cfg bridge.SASLConfig
	cfg.HandshakeTimeout, cfg.MaxReauth = o.handshakeTimeout, o.maxReauth
	cfg.FailedAuthenticationDelay = o.failedAuthDelay
	if cfg.FailedAuthenticationDelay == 0 {
		cfg.FailedAuthenticationDelay = -1 // 0 means at once here, the default in bridge
	}
	want := map[string]bool{}
	explicit := strings.TrimSpace(o.mechanisms) != ""
	for m := range strings.SplitSeq(o.mechanisms, ",") {
		if m = strings.TrimSpace(m); m != "" {
			if !slices.Contains([]string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512, sasl.OAuthBearer}, m) {
				return cfg, fmt.Errorf("--sasl-enabled-mechanisms: unknown mechanism %q", m)
			}
			want[m] = true
		}
	}
	on := func(m string) bool { return !explicit || want[m] }
	switch o.plainVerifier {
	case "file":
	case "iggy":
		if o.plainUsersFile != "" {
			return cfg, fmt.Errorf("--sasl-plain-verifier iggy checks Iggy's users: drop --sasl-plain-users-file")
		}
		if on(sasl.Plain) {
			// The verifier needs the Iggy client: serve sets cfg.Plain
			// (plainAgainstIggy) once the backend is open.
			cfg.Plain = pendingIggyPlain{}
		}
		return o.restOfConfig(cfg, want, explicit, on)
	default:
		return cfg, fmt.Errorf("--sasl-plain-verifier %q: want file or iggy", o.plainVerifier)
	}
	if o.plainUsersFile != "" && on(sasl.Plain) {
		pu, err := sasl.LoadPlainUsers(o.plainUsersFile)
		if err != nil {
			return cfg, fmt.Errorf("--sasl-plain-users-file: %w", err)
		}
		cfg.Plain = pu
	} else if explicit && want[sasl.Plain] {
		return cfg, fmt.Errorf("--sasl-enabled-mechanisms: PLAIN needs --sasl-plain-users-file (or --sasl-plain-verifier iggy)")
	}
	return o.restOfConfig(cfg, want, explicit, on)
}

// restOfConfig is bridgeConfig past PLAIN: SCRAM and OAUTHBEARER.
func (o *saslOptions) restOfConfig(cfg bridge.SASLConfig, want map[string]bool, explicit bool, on func(string) bool) (bridge.SASLConfig, error) {
	if want[sasl.ScramSHA256] != want[sasl.ScramSHA512] {
		return cfg, fmt.Errorf("--sasl-enabled-mechanisms: SCRAM-SHA-256 and SCRAM-SHA-512 go together (one credential store)")
	}
	cfg.Scram = on(sasl.ScramSHA256)
	if o.scramBootstrapFile != "" {
		users, err := readUserPasswords(o.scramBootstrapFile)
		if err != nil {
			return cfg, fmt.Errorf("--sasl-scram-bootstrap-users-file: %w", err)
		}
		cfg.ScramBootstrap = users
	}
	if o.oauthJWKSFile != "" && on(sasl.OAuthBearer) {
		v, err := sasl.LoadOAuthValidator(sasl.OAuthConfig{
			JWKSFile: o.oauthJWKSFile, Issuer: o.oauthIssuer, Audience: splitList(o.oauthAudience),
			SubClaim: o.oauthSubClaim, ClockSkew: o.oauthClockSkew,
		})
		if err != nil {
			return cfg, fmt.Errorf("--sasl-oauthbearer-jwks-file: %w", err)
		}
		cfg.OAuth = v
	} else if explicit && want[sasl.OAuthBearer] {
		return cfg, fmt.Errorf("--sasl-enabled-mechanisms: OAUTHBEARER needs --sasl-oauthbearer-jwks-file")
	}
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// readUserPasswords reads user:password lines (blank lines and # comments
// skipped).
func readUserPasswords(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	users := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimRight(sc.Text(), "\r")
		if s := strings.TrimSpace(t); s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		u, p, ok := strings.Cut(t, ":")
		if !ok || u == "" || p == "" {
			return nil, fmt.Errorf("%s:%d: want user:password", path, n)
		}
		users[u] = p
	}
	return users, sc.Err()
}

// pendingIggyPlain stands for the Iggy PLAIN verifier until the backend is
// open (plainAgainstIggy replaces it); it refuses everyone.
type pendingIggyPlain struct{}

func (pendingIggyPlain) VerifyPlain(context.Context, string, string) (bool, error) {
	return false, errors.New("sasl: the Iggy PLAIN verifier is not connected")
}

// plainAgainstIggy replaces the pending Iggy PLAIN verifier of cfg with one
// over backend, behind a cache of successes and at most 8 logins at once.
func (o *saslOptions) plainAgainstIggy(cfg *bridge.SASLConfig, backend store.Log) error {
	if _, pending := cfg.Plain.(pendingIggyPlain); !pending {
		return nil
	}
	ic, ok := backend.(*iggy.Client)
	if !ok {
		return errors.New("--sasl-plain-verifier iggy needs the Iggy backend (--iggy-addr)")
	}
	cfg.Plain = sasl.NewCachedPlain(ic, o.plainCacheTTL, 8)
	return nil
}
