package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/sasl"
)

// saslGateway starts a gateway whose one listener is SASL_PLAINTEXT, with
// PLAIN user alice:secret and SCRAM user bob:hunter2.
func saslGateway(t *testing.T, mod func(*bridge.Config)) *kiggytest.Gateway {
	t.Helper()
	users, err := sasl.ParsePlainUsers(strings.NewReader("alice:secret\ncarol:"+sasl.HashPassword("pw", 4096)+"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg := bridge.Config{
		Listeners: map[string]security.Protocol{"": security.SASLPlaintext},
		SASL: bridge.SASLConfig{
			Plain: users, Scram: true,
			ScramBootstrap: map[string]string{"bob": "hunter2"},
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	return kiggytest.Start(t, kiggytest.Options{Bridge: cfg})
}

// saslRoundTrip produces 3 records to topic with mech and reads them back.
func saslRoundTrip(t *testing.T, addr, topic string, mech ksasl.Mechanism) error {
	t.Helper()
	return saslRoundTripOpts(t, addr, topic, kgo.SASL(mech))
}

// saslRoundTripOpts is saslRoundTrip with the client's options.
func saslRoundTripOpts(t *testing.T, addr, topic string, opts ...kgo.Opt) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second), kgo.AllowAutoTopicCreation()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			return err
		}
	}
	got := 0
	for got < 3 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return err
		}
		got += fs.NumRecords()
	}
	return nil
}

// saslFails produces one record with mech and returns the first error,
// without retries.
func saslFails(t *testing.T, addr, topic string, mech ksasl.Mechanism) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.RequestRetries(0), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, rt)
	md.AllowAutoTopicCreation = true
	_, err = cl.Request(ctx, md)
	return err
}

// TestSASLFranzGo produces and consumes with franz-go on PLAIN (clear and
// hashed file entries), SCRAM-SHA-256 and SCRAM-SHA-512 over a socket; a
// wrong password fails with SASL_AUTHENTICATION_FAILED and writes nothing.
func TestSASLFranzGo(t *testing.T) {
	gw := saslGateway(t, nil)
	for _, tc := range []struct {
		name string
		mech ksasl.Mechanism
	}{
		{"plain", plain.Auth{User: "alice", Pass: "secret"}.AsMechanism()},
		{"plain-hashed", plain.Auth{User: "carol", Pass: "pw"}.AsMechanism()},
		{"scram256", kscram.Auth{User: "bob", Pass: "hunter2"}.AsSha256Mechanism()},
		{"scram512", kscram.Auth{User: "bob", Pass: "hunter2"}.AsSha512Mechanism()},
	} {
		if err := saslRoundTrip(t, gw.Addr, "t-"+tc.name, tc.mech); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name string
		mech ksasl.Mechanism
	}{
		{"plain", plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()},
		{"plain-unknown", plain.Auth{User: "nobody", Pass: "secret"}.AsMechanism()},
		{"scram256", kscram.Auth{User: "bob", Pass: "wrong"}.AsSha256Mechanism()},
		{"scram512-unknown", kscram.Auth{User: "alice", Pass: "secret"}.AsSha512Mechanism()},
	} {
		if err := saslFails(t, gw.Addr, "bad-"+tc.name, tc.mech); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", tc.name, err)
		}
	}
	// Nothing was written: the topics the failed clients produced to do not
	// exist.
	adm, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.SASL(plain.Auth{User: "alice", Pass: "secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	tds, err := kadm.NewClient(adm).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range tds.Names() {
		if strings.HasPrefix(name, "bad-") {
			t.Errorf("topic %s created by a failed client", name)
		}
	}
	m := gw.Metrics()
	for _, want := range []string{
		`kiggy_sasl_authentications_total{mechanism="PLAIN",outcome="success"}`,
		`kiggy_sasl_authentications_total{mechanism="SCRAM-SHA-512",outcome="failure"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestSASLGate: on a SASL listener, a request other than ApiVersions and
// SaslHandshake before authentication closes the connection, as do a
// request after a failed authentication and an unknown mechanism.
func TestSASLGate(t *testing.T) {
	gw := saslGateway(t, nil)
	dial := func() *kafkawire.Conn {
		c, err := kafkawire.Dial(gw.Addr, "gate", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// Produce before anything: closed, nothing written.
	c := dial()
	prod := kmsg.NewPtrProduceRequest()
	prod.Version, prod.Acks, prod.TimeoutMillis = 9, -1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "gate"
	prod.Topics = append(prod.Topics, pt)
	if _, err := c.Send(prod); err != nil {
		t.Fatal(err)
	}
	if err := c.ExpectClosed(5 * time.Second); err != nil {
		t.Errorf("unauthenticated Produce: %v", err)
	}
	// ApiVersions then Metadata: closed.
	c = dial()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "t", "1"
	if _, err := c.RoundTrip(av); err != nil {
		t.Fatal(err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	if _, err := c.Send(md); err != nil {
		t.Fatal(err)
	}
	if err := c.ExpectClosed(5 * time.Second); err != nil {
		t.Errorf("Metadata during handshake: %v", err)
	}
	// Unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the list, then
	// closed by the gateway without another request.
	c = dial()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "GSSAPI"
	r, err := c.RoundTrip(hs)
	if err != nil {
		t.Fatal(err)
	}
	hr := r.(*kmsg.SASLHandshakeResponse)
	if hr.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hr.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
		t.Errorf("GSSAPI: %+v", hr)
	}
	if err := c.ExpectClosed(5 * time.Second); err != nil {
		t.Errorf("after unsupported mechanism: %v", err)
	}
	// Wrong PLAIN password: SASL_AUTHENTICATION_FAILED, then closed.
	c = dial()
	hs.Mechanism = "PLAIN"
	if r, err := c.RoundTrip(hs); err != nil || r.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("PLAIN handshake: %v %+v", err, r)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 2, []byte("\x00alice\x00nope")
	r, err = c.RoundTrip(au)
	if err != nil {
		t.Fatal(err)
	}
	if ar := r.(*kmsg.SASLAuthenticateResponse); ar.ErrorCode != kerr.SaslAuthenticationFailed.Code || ar.ErrorMessage == nil {
		t.Errorf("wrong password: %+v", ar)
	}
	// Closed once the answer is written, as Kafka does: no request needed.
	if err := c.ExpectClosed(5 * time.Second); err != nil {
		t.Errorf("after failed authentication: %v", err)
	}
	// The client sees the close before the engine's loop has counted it:
	// wait for the count.
	authCloses := func() uint64 { st := gw.EngineStats(); return uint64(st.Closed(engine.ReasonAuthentication)) }
	testtools.Eventually(5*time.Second, func() bool { return authCloses() >= 2 })
	if st := gw.EngineStats(); st.Closed(engine.ReasonAuthentication) != 2 {
		t.Errorf("closes counted as authentication_failed: %d, want 2", st.Closed(engine.ReasonAuthentication))
	}
	// The right password, then any request.
	c = dial()
	if _, err := c.RoundTrip(hs); err != nil {
		t.Fatal(err)
	}
	au.SASLAuthBytes = []byte("\x00alice\x00secret")
	if r, err := c.RoundTrip(au); err != nil || r.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 {
		t.Fatalf("PLAIN: %v %+v", err, r)
	}
	if r, err := c.RoundTrip(md); err != nil || len(r.(*kmsg.MetadataResponse).Brokers) != 1 {
		t.Fatalf("Metadata after authentication: %v %+v", err, r)
	}
	// A second SaslHandshake without re-authentication enabled:
	// ILLEGAL_SASL_STATE.
	if r, err := c.RoundTrip(hs); err != nil || r.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("handshake after authentication: %v %+v", err, r)
	}
	// SaslHandshake v0: the PLAIN token as a bare frame.
	c = dial()
	hs0 := kmsg.NewPtrSASLHandshakeRequest()
	hs0.Version, hs0.Mechanism = 0, "PLAIN"
	if r, err := c.RoundTrip(hs0); err != nil || r.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("v0 handshake: %v %+v", err, r)
	}
	tok := []byte("\x00alice\x00secret")
	frame := append([]byte{0, 0, 0, byte(len(tok))}, tok...)
	if err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	c.NetConn().SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c.Reader(), size[:]); err != nil || size != [4]byte{} {
		t.Fatalf("v0 token reply: %v %v (want an empty frame)", size, err)
	}
	if r, err := c.RoundTrip(md); err != nil || len(r.(*kmsg.MetadataResponse).Brokers) != 1 {
		t.Fatalf("Metadata after v0 authentication: %v %+v", err, r)
	}
}

// TestSASLHandshakeTimeout: a connection still unauthenticated past the
// handshake timeout is closed at its next request.
func TestSASLHandshakeTimeout(t *testing.T) {
	gw := saslGateway(t, func(c *bridge.Config) { c.SASL.HandshakeTimeout = 200 * time.Millisecond })
	c, err := kafkawire.Dial(gw.Addr, "slow", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	av := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.RoundTrip(av); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the 200 ms handshake timeout passes: what this test is about
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if _, err := c.Send(hs); err != nil {
		t.Fatal(err)
	}
	if err := c.ExpectClosed(5 * time.Second); err != nil {
		t.Errorf("late handshake: %v", err)
	}
	if m := gw.Metrics(); !strings.Contains(m, `kiggy_sasl_connections_closed_total{reason="handshake_timeout"} 1`) {
		t.Error("handshake timeout not counted")
	}
}

// TestSASLReauthentication (KIP-368): the session lifetime is announced,
// franz-go re-authenticates on its open connection before it ends and keeps
// producing; a raw client that lets it pass is closed at its next request.
func TestSASLReauthentication(t *testing.T) {
	gw := saslGateway(t, func(c *bridge.Config) { c.SASL.MaxReauth = 1500 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.SASL(kscram.Auth{User: "bob", Pass: "hunter2"}.AsSha256Mechanism()),
		kgo.DefaultProduceTopic("reauth"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(4 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", n, err)
		}
		n++
		time.Sleep(100 * time.Millisecond) // paces the produces over several 1.5 s session lifetimes
	}
	if m := gw.Metrics(); strings.Contains(m, "kiggy_sasl_reauthentications_total 0") {
		t.Error("franz-go did not re-authenticate")
	}

	c, err := kafkawire.Dial(gw.Addr, "lapse", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if _, err := c.RoundTrip(hs); err != nil {
		t.Fatal(err)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 1, []byte("\x00alice\x00secret")
	r, err := c.RoundTrip(au)
	if err != nil {
		t.Fatal(err)
	}
	if ar := r.(*kmsg.SASLAuthenticateResponse); ar.ErrorCode != 0 || ar.SessionLifetimeMillis != 1500 {
		t.Fatalf("authenticate: %+v", ar)
	}
	time.Sleep(1600 * time.Millisecond) // the 1.5 s session lifetime lapses: what this test is about
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	if _, err := c.Send(md); err != nil {
		t.Fatal(err)
	}
	if err := c.ExpectClosed(5 * time.Second); err != nil {
		t.Errorf("request after the session ended: %v", err)
	}
}

// TestScramCredentialsWithKadm manages SCRAM users with kadm
// (AlterUserScramCredentials, DescribeUserScramCredentials) and logs in
// with the new user; Kafka's checks answer bad upserts.
func TestScramCredentialsWithKadm(t *testing.T) {
	gw := saslGateway(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.SASL(kscram.Auth{User: "bob", Pass: "hunter2"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "dave", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "pw1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if e := res["dave"].Err; e != nil {
		t.Errorf("dave: %v", e)
	}
	// kadm refuses these itself: send them raw.
	bad := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, u := range []struct {
		name  string
		mech  int8
		iter  int32
		salty int
	}{{"erin", 1, 1000, 32}, {"fay", 2, 20000, 64}, {"gus", 3, 4096, 32}, {"hal", 1, 4096, 5}, {"", 1, 4096, 32}} {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = u.name, u.mech, u.iter, []byte("salt"), make([]byte, u.salty)
		bad.Upsertions = append(bad.Upsertions, up)
	}
	for range 2 {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = "bob", 1
		bad.Deletions = append(bad.Deletions, d)
	}
	br, err := bad.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{"erin": kerr.UnacceptableCredential.Code, "fay": kerr.UnacceptableCredential.Code,
		"gus": kerr.UnsupportedSaslMechanism.Code, "hal": kerr.UnacceptableCredential.Code, "": kerr.UnacceptableCredential.Code,
		"bob": kerr.DuplicateResource.Code}
	if len(br.Results) != len(want) {
		t.Errorf("bad upserts: %d results, want %d", len(br.Results), len(want))
	}
	for _, r := range br.Results {
		if r.ErrorCode != want[r.User] {
			t.Errorf("bad upsert %q: code %d, want %d", r.User, r.ErrorCode, want[r.User])
		}
	}
	if err := saslRoundTrip(t, gw.Addr, "dave", kscram.Auth{User: "dave", Pass: "pw1"}.AsSha256Mechanism()); err != nil {
		t.Errorf("dave logs in: %v", err)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := desc["dave"]; len(d.CredInfos) != 1 || d.CredInfos[0].Iterations != 8192 || d.CredInfos[0].Mechanism != kadm.ScramSha256 {
		t.Errorf("describe dave: %+v", d)
	}
	if b := desc["bob"]; len(b.CredInfos) != 2 {
		t.Errorf("describe bob: %+v", b)
	}
	if _, ok := desc["erin"]; ok {
		t.Error("erin stored")
	}
	one, err := adm.DescribeUserSCRAMs(ctx, "nobody")
	if err == nil {
		err = one["nobody"].Err
	}
	if !errors.Is(err, kerr.ResourceNotFound) {
		t.Errorf("describe nobody: %v", err)
	}
	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha256}, {User: "zed", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res["dave"].Err != nil || !errors.Is(res["zed"].Err, kerr.ResourceNotFound) {
		t.Errorf("delete: %+v", res)
	}
	if err := saslFails(t, gw.Addr, "dave2", kscram.Auth{User: "dave", Pass: "pw1"}.AsSha256Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("deleted dave logs in: %v", err)
	}
}

// TestSASLWithACLs: the SASL principal is the one the authorizer sees. With
// ACLs on and bob a super user, bob (SCRAM) may create SCRAM users and
// produce; alice (PLAIN, no ACL) may neither manage credentials
// (CLUSTER_AUTHORIZATION_FAILED) nor produce (TOPIC_AUTHORIZATION_FAILED).
func TestSASLWithACLs(t *testing.T) {
	gw := saslGateway(t, func(c *bridge.Config) {
		c.Authorization = bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("bob")}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func(mech ksasl.Mechanism) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.SASL(mech), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	bob := client(kscram.Auth{User: "bob", Pass: "hunter2"}.AsSha256Mechanism())
	alice := client(plain.Auth{User: "alice", Pass: "secret"}.AsMechanism())
	// kadm salts the upserts in place: a fresh slice per call.
	up := func() []kadm.UpsertSCRAM {
		return []kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw"}}
	}
	if res, err := bob.AlterUserSCRAMs(ctx, nil, up()); err != nil || res["dave"].Err != nil {
		t.Errorf("bob (super user) alters: %v %+v", err, res)
	}
	res, err := alice.AlterUserSCRAMs(ctx, nil, up())
	if err == nil {
		err = res["dave"].Err // kadm reports a one-user failure either way
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice alters: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if _, err := alice.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice describes: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if _, err := bob.CreateTopic(ctx, 1, 1, nil, "acl-sasl"); err != nil {
		t.Fatal(err)
	}
	if err := saslRoundTrip(t, gw.Addr, "acl-sasl", kscram.Auth{User: "dave", Pass: "pw"}.AsSha512Mechanism()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("dave (no ACL) produces: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// TestScramCredentialsSurviveRestartOnIggy: SCRAM credentials live in the
// system store (docs/design/security.md §8): a user created with kadm on
// one gateway logs in on a new gateway over the same Iggy server.
func TestScramCredentialsSurviveRestartOnIggy(t *testing.T) {
	srv := iggytest.New(iggytest.Config{})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := bridge.Config{
		Listeners: map[string]security.Protocol{"": security.SASLPlaintext},
		SASL:      bridge.SASLConfig{Scram: true, ScramBootstrap: map[string]string{"bob": "hunter2"}},
	}
	first := kiggytest.Start(t, kiggytest.Options{IggyServer: srv, Bridge: cfg})
	if _, ok := first.Log.(store.SystemStore); !ok {
		t.Skip("the Iggy backend keeps no system store in this build")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(first.Addr), kgo.SASL(kscram.Auth{User: "bob", Pass: "hunter2"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "kept", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw"}})
	cl.Close()
	if err != nil || res["kept"].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	first.Stop()

	second := kiggytest.Start(t, kiggytest.Options{IggyServer: srv, Bridge: cfg})
	if err := saslRoundTrip(t, second.Addr, "kept", kscram.Auth{User: "kept", Pass: "pw"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("kept after a restart: %v", err)
	}
	if err := saslFails(t, second.Addr, "kept", kscram.Auth{User: "kept", Pass: "nope"}.AsSha512Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password after a restart: %v", err)
	}
}

// TestSASLPlainAgainstIggy: with PLAIN checked against Iggy's users
// (--sasl-plain-verifier iggy), a Kafka client that names an Iggy user and
// its password produces and consumes; a wrong password or an unknown user
// fails with SASL_AUTHENTICATION_FAILED.
func TestSASLPlainAgainstIggy(t *testing.T) {
	ic := openIggyModel(t, iggy.Config{})
	gw := kiggytest.Start(t, kiggytest.Options{Log: ic, Bridge: bridge.Config{
		Listeners: map[string]security.Protocol{"": security.SASLPlaintext},
		SASL:      bridge.SASLConfig{Plain: sasl.NewCachedPlain(ic, time.Minute, 8)},
	}})
	if err := saslRoundTrip(t, gw.Addr, "iggy-users", plain.Auth{User: "iggy", Pass: "iggy"}.AsMechanism()); err != nil {
		t.Errorf("the Iggy root user: %v", err)
	}
	for _, a := range []plain.Auth{{User: "iggy", Pass: "wrong"}, {User: "nobody", Pass: "iggy"}} {
		if err := saslFails(t, gw.Addr, "bad-iggy-"+a.User, a.AsMechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s/%s: %v, want SASL_AUTHENTICATION_FAILED", a.User, a.Pass, err)
		}
	}
}

// TestSASLFailedAuthenticationDelayKnob: with FailedAuthenticationDelay at
// 2 s a wrong password is answered no sooner than that, its connection
// counted by kiggy_sasl_failed_authentications_delayed meanwhile and not
// after; negative answers at once, well inside those 2 s, counting nothing.
// (The default, 100 ms, is tests/interop's TestSASLFailedAuthenticationDelay,
// against Kafka 4.4 too.)
func TestSASLFailedAuthenticationDelayKnob(t *testing.T) {
	const delay = 2 * time.Second
	const gauge = "kiggy_sasl_failed_authentications_delayed"
	for _, d := range []time.Duration{delay, -1} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			gw := saslGateway(t, func(c *bridge.Config) { c.SASL.FailedAuthenticationDelay = d })
			c, err := kafkawire.Dial(gw.Addr, "knob", 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Version, hs.Mechanism = 1, "PLAIN"
			if _, err := c.RoundTrip(hs); err != nil {
				t.Fatal(err)
			}
			au := kmsg.NewPtrSASLAuthenticateRequest()
			au.Version, au.SASLAuthBytes = 2, []byte("\x00alice\x00wrong")
			sent := time.Now()
			corr, err := c.Send(au)
			if err != nil {
				t.Fatal(err)
			}
			if d > 0 {
				// The request is held: the gauge counts it before the answer.
				held := false
				for !held && time.Since(sent) < delay {
					held = metricValue(t, gw.Metrics(), gauge) == 1
					time.Sleep(10 * time.Millisecond)
				}
				if !held {
					t.Errorf("%s never 1 while the answer was held", gauge)
				}
			}
			var r kmsg.SASLAuthenticateResponse
			r.Version = 2
			if err := c.Recv(corr, &r); err != nil {
				t.Fatal(err)
			}
			took := time.Since(sent)
			if r.ErrorCode != 58 {
				t.Errorf("answered %d, want 58", r.ErrorCode)
			}
			if d > 0 && took < d {
				t.Errorf("answered after %v, want no sooner than %v", took, d)
			}
			if d < 0 && took >= delay {
				t.Errorf("answered after %v with the delay off", took)
			}
			if err := c.ExpectClosed(5 * time.Second); err != nil {
				t.Errorf("after the failure: %v", err)
			}
			if v := metricValue(t, gw.Metrics(), gauge); v != 0 {
				t.Errorf("%s = %v after the answer, want 0", gauge, v)
			}
		})
	}
}
