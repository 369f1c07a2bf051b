package bridge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/security"
)

// aclBenchGateway starts an embedded-log gateway for the Produce benchmark
// and allocation test, with the authorizer on or off. On, User:admin is a
// super user and creates 200 ACLs over the socket (literal and prefixed,
// several prefix lengths) besides the one that lets the benchmark's
// anonymous connection (no SASL) write and describe its topic.
func aclBenchGateway(tb testing.TB, on bool) *kiggytest.Gateway {
	tb.Helper()
	cfg := bridge.Config{}
	if on {
		cfg.Authorization = bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("admin")}}
		restore := bridge.SetTestPrincipals(func(id string) (security.Principal, bool) {
			return security.User("admin"), id == "admin"
		})
		tb.Cleanup(restore)
	}
	gw := kiggytest.Start(tb, kiggytest.Options{Embedded: true, Memlog: memlog.Config{PartitionBytes: 64 << 20}, Bridge: cfg})
	if !on {
		return gw
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ClientID("admin"))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lit, pre []string
	for i := range 100 {
		lit = append(lit, fmt.Sprintf("other-%d", i))
		pre = append(pre, fmt.Sprintf("team-%03d-x", i)[:4+i%6])
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:ANONYMOUS").Topics("bench", "allocs").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:carol").Topics(lit...).Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:dave").Topics(pre...).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Deny("User:mallory").Topics("b").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed),
	} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				tb.Fatal(r.Err)
			}
		}
	}
	return gw
}

// BenchmarkGatewayProduceACL: BenchmarkGatewayProduce's request with the
// authorizer off and on, side by side (docs/design/security.md §6.4).
func BenchmarkGatewayProduceACL(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("acl=%v", on), func(b *testing.B) {
			benchProduce(b, aclBenchGateway(b, on))
		})
	}
}
