package interop

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/security"
)

// aclCommand is kafka-acls.
const aclCommand = "org.apache.kafka.tools.AclCommand"

// aclTargetAddr starts a target with ACLs on and User:ANONYMOUS a super
// user (the tool connects unauthenticated): kiggy with --acl-enabled
// --super-users User:ANONYMOUS, or, with KIGGY_INTEROP_TARGET=kafka, a Kafka
// 4.4 broker of its own with the StandardAuthorizer and the same
// super.users (the shared broker has no authorizer).
func aclTargetAddr(t *testing.T) string {
	t.Helper()
	if os.Getenv(TargetEnv) == "kafka" {
		return kafkatest.StartConfig(t, kafkatest.Config{StandardAuthorizer: true}).Addr
	}
	g := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{Authorization: bridge.AuthorizationConfig{
		Enabled: true, SuperUsers: []security.Principal{security.Anonymous}}}})
	return g.Addr
}

// aclBlocks splits kafka-acls output into its resource blocks ("Current
// ACLs for resource `…`:" and its entry lines), entries sorted within a
// block and blocks sorted: brokers may list resources and entries in any
// order.
func aclBlocks(out string) []string {
	var blocks []string
	for _, b := range strings.Split(strings.TrimSpace(out), "\n\n") {
		lines := strings.Split(strings.TrimSpace(b), "\n")
		for i := range lines {
			lines[i] = strings.TrimSpace(lines[i])
		}
		if len(lines) > 1 {
			slices.Sort(lines[1:])
		}
		blocks = append(blocks, strings.Join(lines, "\n"))
	}
	slices.Sort(blocks)
	return blocks
}

// TestKafkaACLs manages ACLs with kafka-acls (--add, --list, --remove) and
// checks what the tool prints, block by block: the expectations are what a
// Kafka 4.4 broker with the StandardAuthorizer answers
// (KIGGY_INTEROP_TARGET=kafka runs this test against one).
func TestKafkaACLs(t *testing.T) {
	addr := aclTargetAddr(t)
	// The ACL APIs at the versions Kafka 4.4 serves: 1–3 (v0 went with
	// KIP-896).
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []int16{29, 30, 31} {
		i := slices.IndexFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == key })
		if i < 0 || av.ApiKeys[i].MinVersion != 1 || av.ApiKeys[i].MaxVersion != 3 {
			t.Errorf("ApiVersions of key %d: %+v, want 1-3", key, av.ApiKeys[max(i, 0)])
		}
	}
	tool := func(args ...string) string {
		t.Helper()
		r := runJava(t, 2*time.Minute, nil, "", aclCommand, append([]string{"--bootstrap-server", addr}, args...)...)
		if r.code != 0 {
			t.Fatalf("kafka-acls %s:\n%s", strings.Join(args, " "), r)
		}
		t.Logf("kafka-acls %s:\n%s", strings.Join(args, " "), r.stdout)
		return r.stdout
	}
	check := func(what, out string, want ...string) {
		t.Helper()
		if got := aclBlocks(out); !slices.Equal(got, aclBlocks(strings.Join(want, "\n\n"))) {
			t.Errorf("kafka-acls %s printed\n%s\nwant (in any order)\n%s", what, out, strings.Join(want, "\n\n"))
		}
	}
	res := func(typ, name, pattern string) string {
		return "ResourcePattern(resourceType=" + typ + ", name=" + name + ", patternType=" + pattern + ")`:"
	}
	entry := func(principal, host, op, perm string) string {
		return "(principal=" + principal + ", host=" + host + ", operation=" + op + ", permissionType=" + perm + ")"
	}
	var (
		group   = res("GROUP", "g-", "LITERAL")
		topicT  = res("TOPIC", "t", "LITERAL")
		app     = res("TOPIC", "app-", "PREFIXED")
		cluster = res("CLUSTER", "kafka-cluster", "LITERAL")

		aliceRead     = entry("User:alice", "*", "READ", "ALLOW")
		aliceDescribe = entry("User:alice", "*", "DESCRIBE", "ALLOW")
		bobDeny       = entry("User:bob", "10.0.0.1", "ALL", "DENY")
		anyIdem       = entry("User:*", "*", "IDEMPOTENT_WRITE", "ALLOW")
	)
	lines := func(ls ...string) string { return strings.Join(ls, "\n") }

	check("--add (topic and group)",
		tool("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe", "--topic", "t", "--group", "g-"),
		lines("Adding ACLs for resource `"+group, aliceRead, aliceDescribe), lines("Adding ACLs for resource `"+topicT, aliceRead, aliceDescribe))
	check("--add (prefixed deny)",
		tool("--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--operation", "All", "--resource-pattern-type", "prefixed", "--topic", "app-"),
		lines("Adding ACLs for resource `"+app, bobDeny))
	check("--add (cluster)",
		tool("--add", "--allow-principal", "User:*", "--operation", "IdempotentWrite", "--cluster"),
		lines("Adding ACLs for resource `"+cluster, anyIdem))
	check("--list", tool("--list"),
		lines("Current ACLs for resource `"+cluster, anyIdem),
		lines("Current ACLs for resource `"+group, aliceRead, aliceDescribe),
		lines("Current ACLs for resource `"+app, bobDeny),
		lines("Current ACLs for resource `"+topicT, aliceRead, aliceDescribe))
	check("--list --topic app-1 --resource-pattern-type match",
		tool("--list", "--topic", "app-1", "--resource-pattern-type", "match"),
		lines("Current ACLs for resource `"+app, bobDeny))
	check("--remove", tool("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t"), "")
	check("--list --topic t after --remove", tool("--list", "--topic", "t"),
		lines("Current ACLs for resource `"+topicT, aliceDescribe))
}
