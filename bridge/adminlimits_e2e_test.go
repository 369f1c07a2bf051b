package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/security"
)

// TestMaxACLs: CreateAcls stores ACLs up to MaxACLs; a new one past it
// gets POLICY_VIOLATION and is not stored, while one that exists still
// succeeds and a deletion makes room.
func TestMaxACLs(t *testing.T) {
	aclPrincipals(t)
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{MaxACLs: 3,
		Authorization: bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("admin")}}}})
	adm := kadm.NewClient(aclClient(t, gw.Addr, "admin"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := func(topic string) error {
		b := kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(topic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("CreateAcls %s: %v", topic, err)
		}
		return res[0].Err
	}
	for i := range 3 {
		if err := create(fmt.Sprintf("t%d", i)); err != nil {
			t.Fatalf("ACL %d: %v", i, err)
		}
	}
	if err := create("t3"); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("a fourth ACL: %v, want POLICY_VIOLATION", err)
	}
	if err := create("t0"); err != nil {
		t.Fatalf("an ACL that exists: %v", err)
	}
	if got := metricValue(t, gw.Metrics(), `kiggy_admin_refused_total{reason="max_acls"}`); got != 1 {
		t.Errorf("refused metric %v, want 1", got)
	}
	del := kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t0").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := adm.DeleteACLs(ctx, del); err != nil {
		t.Fatal(err)
	}
	if err := create("t3"); err != nil {
		t.Fatalf("an ACL after a deletion: %v", err)
	}
}

// TestMaxScramCredentials: AlterUserScramCredentials stores credentials up
// to MaxScramCredentials; a new one past it gets POLICY_VIOLATION, while an
// existing credential's new password is stored.
func TestMaxScramCredentials(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{MaxScramCredentials: 2}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	upsert := func(user, pw string) error {
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: pw}})
		if err != nil {
			t.Fatalf("AlterUserScramCredentials %s: %v", user, err)
		}
		return res[user].Err
	}
	for _, u := range []string{"u1", "u2"} {
		if err := upsert(u, "pw"); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	if err := upsert("u3", "pw"); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("a third credential: %v, want POLICY_VIOLATION", err)
	}
	if err := upsert("u1", "new"); err != nil {
		t.Fatalf("a new password for u1: %v", err)
	}
	if got := metricValue(t, gw.Metrics(), `kiggy_admin_refused_total{reason="max_scram_credentials"}`); got != 1 {
		t.Errorf("refused metric %v, want 1", got)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := desc["u3"]; ok || len(desc) != 2 {
		t.Errorf("described users %v, want u1 and u2", desc)
	}
}

// TestGroupMaxSizeDescribed: DescribeConfigs of the broker reports
// group.max.size under Kafka's name: the configured cap, or Kafka's
// Integer.MAX_VALUE when there is none.
func TestGroupMaxSizeDescribed(t *testing.T) {
	for _, tc := range []struct {
		size int
		want string
	}{{7, "7"}, {0, "2147483647"}} {
		gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{Group: group.Config{MaxGroupSize: tc.size}}})
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rcs, err := kadm.NewClient(cl).DescribeBrokerConfigs(ctx, 1)
		cancel()
		cl.Close()
		if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
			t.Fatalf("broker configs: %v %+v", err, rcs)
		}
		got := ""
		for _, c := range rcs[0].Configs {
			if c.Key == "group.max.size" {
				got = c.MaybeValue()
			}
		}
		if got != tc.want {
			t.Errorf("MaxGroupSize %d: group.max.size = %q, want %q", tc.size, got, tc.want)
		}
	}
}
