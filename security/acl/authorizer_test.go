package acl

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/security"
)

var (
	alice = security.User("alice")
	bob   = security.User("bob")
	admin = security.User("admin")
)

func lit(rt ResourceType, name, principal, host string, op Operation, perm Permission) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: PatternLiteral, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func pre(rt ResourceType, name, principal, host string, op Operation, perm Permission) Binding {
	b := lit(rt, name, principal, host, op, perm)
	b.PatternType = PatternPrefixed
	return b
}

// TestAuthorize checks each rule of the decision (docs/design/security.md
// §6.2) on one case that it alone decides.
func TestAuthorize(t *testing.T) {
	type check struct {
		p    security.Principal
		host string
		op   Operation
		rt   ResourceType
		name string
		want bool
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		acls   []Binding
		checks []check
	}{
		{"literal allow", Config{}, []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)}, []check{
			{alice, "10.0.0.1", OpRead, ResourceTopic, "t", true},
			{alice, "10.0.0.1", OpWrite, ResourceTopic, "t", false},   // other operation
			{bob, "10.0.0.1", OpRead, ResourceTopic, "t", false},      // other principal
			{alice, "10.0.0.1", OpRead, ResourceTopic, "t2", false},   // no ACL: denied by default
			{alice, "10.0.0.1", OpRead, ResourceTopic, "", false},     // literal is not a prefix
			{alice, "10.0.0.1", OpRead, ResourceGroup, "t", false},    // other resource type
			{alice, "10.0.0.1", OpDescribe, ResourceTopic, "t", true}, // READ implies DESCRIBE
			{alice, "10.0.0.1", OpAlterConfigs, ResourceTopic, "t", false},
		}},
		{"implied operations", Config{}, []Binding{
			lit(ResourceTopic, "w", "User:alice", "*", OpWrite, PermAllow),
			lit(ResourceTopic, "d", "User:alice", "*", OpDelete, PermAllow),
			lit(ResourceTopic, "a", "User:alice", "*", OpAlter, PermAllow),
			lit(ResourceTopic, "ac", "User:alice", "*", OpAlterConfigs, PermAllow),
			lit(ResourceTopic, "c", "User:alice", "*", OpCreate, PermAllow),
		}, []check{
			{alice, "h", OpDescribe, ResourceTopic, "w", true},
			{alice, "h", OpDescribe, ResourceTopic, "d", true},
			{alice, "h", OpDescribe, ResourceTopic, "a", true},
			{alice, "h", OpDescribeConfigs, ResourceTopic, "ac", true},
			{alice, "h", OpDescribe, ResourceTopic, "ac", false},
			{alice, "h", OpDescribe, ResourceTopic, "c", false}, // CREATE implies nothing
			{alice, "h", OpRead, ResourceTopic, "w", false},
		}},
		{"ALL", Config{}, []Binding{lit(ResourceGroup, "g", "User:alice", "*", OpAll, PermAllow)}, []check{
			{alice, "h", OpRead, ResourceGroup, "g", true},
			{alice, "h", OpDelete, ResourceGroup, "g", true},
			{bob, "h", OpRead, ResourceGroup, "g", false},
		}},
		{"prefixed", Config{}, []Binding{pre(ResourceTopic, "app-", "User:alice", "*", OpWrite, PermAllow)}, []check{
			{alice, "h", OpWrite, ResourceTopic, "app-1", true},
			{alice, "h", OpWrite, ResourceTopic, "app-", true}, // a prefix matches the name itself
			{alice, "h", OpWrite, ResourceTopic, "app", false},
			{alice, "h", OpWrite, ResourceTopic, "xapp-1", false},
		}},
		{"several prefix lengths", Config{}, []Binding{
			pre(ResourceTopic, "a", "User:alice", "*", OpRead, PermAllow),
			pre(ResourceTopic, "abc-", "User:bob", "*", OpRead, PermAllow),
			pre(ResourceTopic, "abcdefgh", "User:admin", "*", OpRead, PermAllow),
		}, []check{
			{alice, "h", OpRead, ResourceTopic, "abc-1", true},
			{bob, "h", OpRead, ResourceTopic, "abc-1", true},
			{bob, "h", OpRead, ResourceTopic, "abd", false},
			{admin, "h", OpRead, ResourceTopic, "abcdefgh", true},
			{admin, "h", OpRead, ResourceTopic, "abcdefg", false},
		}},
		{"deny wins", Config{}, []Binding{
			lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow),
			pre(ResourceTopic, "t", "User:alice", "*", OpRead, PermDeny),
			lit(ResourceTopic, "u", "User:*", "*", OpAll, PermAllow),
			lit(ResourceTopic, "u", "User:alice", "10.0.0.9", OpWrite, PermDeny),
			lit(ResourceTopic, "v", "User:alice", "*", OpAll, PermAllow),
			lit(ResourceTopic, "v", "User:alice", "*", OpRead, PermDeny),
		}, []check{
			{alice, "h", OpRead, ResourceTopic, "t", false},
			{alice, "10.0.0.1", OpWrite, ResourceTopic, "u", true},
			{alice, "10.0.0.9", OpWrite, ResourceTopic, "u", false},
			{alice, "10.0.0.9", OpRead, ResourceTopic, "u", true},
			{bob, "10.0.0.9", OpWrite, ResourceTopic, "u", true},
			{alice, "h", OpRead, ResourceTopic, "v", false},
			// A DENY of READ does not deny DESCRIBE (implication is for ALLOW only).
			{alice, "h", OpDescribe, ResourceTopic, "v", true},
		}},
		{"deny ALL", Config{}, []Binding{
			lit(ResourceTopic, Wildcard, "User:*", "*", OpAll, PermAllow),
			lit(ResourceTopic, "secret", "User:bob", "*", OpAll, PermDeny),
		}, []check{
			{bob, "h", OpDescribe, ResourceTopic, "secret", false},
			{bob, "h", OpRead, ResourceTopic, "public", true},
			{alice, "h", OpRead, ResourceTopic, "secret", true},
		}},
		{"wildcard principal, resource and host", Config{}, []Binding{
			lit(ResourceTopic, Wildcard, "User:*", "*", OpRead, PermAllow),
			lit(ResourceGroup, "g", "User:alice", "10.0.0.1", OpRead, PermAllow),
		}, []check{
			{alice, "h", OpRead, ResourceTopic, "any", true},
			{security.Principal{Type: "Group", Name: "x"}, "h", OpRead, ResourceTopic, "any", true},
			{bob, "h", OpRead, ResourceTopic, Wildcard, true},
			{alice, "10.0.0.1", OpRead, ResourceGroup, "g", true},
			{alice, "10.0.0.2", OpRead, ResourceGroup, "g", false},
		}},
		{"super user", Config{SuperUsers: []security.Principal{admin}}, []Binding{
			lit(ResourceTopic, Wildcard, "User:*", "*", OpAll, PermDeny),
		}, []check{
			{admin, "h", OpWrite, ResourceTopic, "t", true},
			{admin, "h", OpAlter, ResourceCluster, ClusterName, true},
			{alice, "h", OpWrite, ResourceTopic, "t", false},
		}},
		{"no ACL found, denied", Config{}, []Binding{lit(ResourceTopic, "t", "User:bob", "*", OpRead, PermAllow)}, []check{
			{alice, "h", OpRead, ResourceTopic, "other", false},
			{alice, "h", OpRead, ResourceTopic, "t", false},
		}},
		{"no ACL found, allowed", Config{AllowIfNoACL: true}, []Binding{lit(ResourceTopic, "t", "User:bob", "*", OpRead, PermAllow)}, []check{
			{alice, "h", OpRead, ResourceTopic, "other", true},
			{alice, "h", OpRead, ResourceGroup, "g", true},
			// An ACL names the resource: the default no longer applies.
			{alice, "h", OpRead, ResourceTopic, "t", false},
			{bob, "h", OpRead, ResourceTopic, "t", true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.cfg)
			for _, b := range tc.acls {
				if err := b.Validate(); err != nil {
					t.Fatalf("%v: %v", b, err)
				}
			}
			a.Add(tc.acls...)
			for _, c := range tc.checks {
				if got := a.Authorize(c.p, c.host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("Authorize(%v, %s, %v, %v, %q) = %v, want %v", c.p, c.host, c.op, c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		acls []Binding
		p    security.Principal
		want bool
	}{
		{"no ACLs", Config{}, nil, alice, false},
		{"no ACLs, allow if none", Config{AllowIfNoACL: true}, nil, alice, true},
		{"super user", Config{SuperUsers: []security.Principal{admin}}, nil, admin, true},
		{"one literal", Config{}, []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpWrite, PermAllow)}, alice, true},
		{"other principal", Config{}, []Binding{lit(ResourceTopic, "t", "User:bob", "*", OpWrite, PermAllow)}, alice, false},
		{"other operation", Config{}, []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)}, alice, false},
		{"ALL", Config{}, []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpAll, PermAllow)}, alice, true},
		{"literal shadowed", Config{}, []Binding{
			lit(ResourceTopic, "t", "User:alice", "*", OpWrite, PermAllow),
			lit(ResourceTopic, "t", "User:alice", "*", OpWrite, PermDeny)}, alice, false},
		{"prefix shadowed", Config{}, []Binding{
			pre(ResourceTopic, "app-1", "User:alice", "*", OpWrite, PermAllow),
			pre(ResourceTopic, "app", "User:alice", "*", OpWrite, PermDeny)}, alice, false},
		{"one of two shadowed", Config{}, []Binding{
			lit(ResourceTopic, "a", "User:alice", "*", OpWrite, PermAllow),
			lit(ResourceTopic, "b", "User:alice", "*", OpWrite, PermAllow),
			lit(ResourceTopic, "a", "User:alice", "*", OpWrite, PermDeny)}, alice, true},
		{"wildcard deny", Config{}, []Binding{
			lit(ResourceTopic, "a", "User:alice", "*", OpWrite, PermAllow),
			lit(ResourceTopic, Wildcard, "User:*", "*", OpWrite, PermDeny)}, alice, false},
	} {
		a := New(tc.cfg)
		a.Add(tc.acls...)
		if got := a.AuthorizeAny(tc.p, "h", OpWrite, ResourceTopic); got != tc.want {
			t.Errorf("%s: AuthorizeAny = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAddRemoveDescribe(t *testing.T) {
	a := New(Config{})
	b1 := lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)
	b2 := pre(ResourceTopic, "t", "User:bob", "*", OpWrite, PermDeny)
	b3 := lit(ResourceGroup, "g", "User:alice", "*", OpRead, PermAllow)
	if got := a.Add(b1, b2, b3, b1); len(got) != 3 {
		t.Fatalf("Add: %v", got)
	}
	if got := a.Add(b1); len(got) != 0 || a.Len() != 3 {
		t.Fatalf("second Add of the same binding: %v, len %d", got, a.Len())
	}
	all := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}
	if got := a.Describe(all); len(got) != 3 {
		t.Fatalf("Describe(all) = %v", got)
	}
	match := all
	match.ResourceType, match.PatternType, match.ResourceName, match.HasName = ResourceTopic, PatternMatch, "tx", true
	if got := a.Describe(match); len(got) != 1 || got[0] != b2 {
		t.Fatalf("Describe(MATCH tx) = %v", got)
	}
	match.ResourceName = "t"
	if got := a.Describe(match); len(got) != 2 {
		t.Fatalf("Describe(MATCH t) = %v", got)
	}
	exact := all
	exact.ResourceName, exact.HasName = "t", true
	if got := a.Describe(exact); len(got) != 2 {
		t.Fatalf("Describe(ANY t) = %v", got)
	}
	exact.PatternType = PatternPrefixed
	if got := a.Describe(exact); len(got) != 1 || got[0] != b2 {
		t.Fatalf("Describe(PREFIXED t) = %v", got)
	}
	byPrincipal := all
	byPrincipal.Principal, byPrincipal.HasPrincipal = "User:alice", true
	if got := a.Remove(byPrincipal); len(got) != 2 {
		t.Fatalf("Remove(alice) = %v", got)
	}
	if a.Authorize(alice, "h", OpRead, ResourceTopic, "t") {
		t.Error("alice still reads t after her ACLs were removed")
	}
	if got := a.Describe(all); len(got) != 1 || got[0] != b2 {
		t.Fatalf("after Remove: %v", got)
	}
}

// TestRemoveBindings: the bindings given are removed in one step, those
// not held are ignored, and what is left is authorized as before.
func TestRemoveBindings(t *testing.T) {
	a := New(Config{})
	b1 := lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)
	b2 := lit(ResourceTopic, "u", "User:alice", "*", OpRead, PermAllow)
	b3 := lit(ResourceGroup, "g", "User:alice", "*", OpRead, PermAllow)
	a.Add(b1, b2, b3)
	unknown := lit(ResourceTopic, "v", "User:alice", "*", OpRead, PermAllow)
	if n := a.RemoveBindings([]Binding{b1, b3, unknown, b1}); n != 2 || a.Len() != 1 {
		t.Fatalf("RemoveBindings removed %d, %d left; want 2, 1", n, a.Len())
	}
	if a.Authorize(alice, "h", OpRead, ResourceTopic, "t") || !a.Authorize(alice, "h", OpRead, ResourceTopic, "u") {
		t.Error("after removing t's ACL: alice must not read t and must read u")
	}
	if n := a.RemoveBindings(nil); n != 0 || a.Len() != 1 {
		t.Fatalf("RemoveBindings(nil) removed %d", n)
	}
}

func TestValidate(t *testing.T) {
	good := lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mut  func(*Binding)
		want error
	}{
		{func(b *Binding) { b.ResourceType = ResourceAny }, ErrResourceType},
		{func(b *Binding) { b.PatternType = PatternMatch }, ErrPatternType},
		{func(b *Binding) { b.Operation = OpAny }, ErrOperation},
		{func(b *Binding) { b.Permission = PermAny }, ErrPermission},
		{func(b *Binding) { b.ResourceName = "" }, ErrEmptyName},
		{func(b *Binding) { b.ResourceType = ResourceCluster }, ErrClusterName},
		{func(b *Binding) { b.Principal = "alice" }, ErrPrincipal},
		{func(b *Binding) { b.Host = "" }, ErrHost},
	} {
		b := good
		tc.mut(&b)
		if err := b.Validate(); err != tc.want {
			t.Errorf("%v: %v, want %v", b, err, tc.want)
		}
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	b := pre(ResourceGroup, "g-ü", "User:CN=a,O=b", "10.0.0.1", OpDescribe, PermDeny)
	got, err := Unmarshal(Marshal(b))
	if err != nil || got != b {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if Key(b) == Key(lit(ResourceGroup, "g-ü", "User:CN=a,O=b", "10.0.0.1", OpDescribe, PermDeny)) || len(Key(b)) != 64 {
		t.Error("keys of different bindings collide, or are not 64 hex digits")
	}
	enc := Marshal(b)
	for cut := range len(enc) {
		if _, err := Unmarshal(enc[:cut]); err == nil {
			t.Fatalf("truncated to %d of %d decoded", cut, len(enc))
		}
	}
	if _, err := Unmarshal(append(enc, 0)); err == nil {
		t.Fatal("trailing byte decoded")
	}
	bad := append([]byte{2}, enc[1:]...)
	if _, err := Unmarshal(bad); err == nil {
		t.Fatal("unknown version decoded")
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add(Marshal(lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)))
	f.Add(Marshal(pre(ResourceCluster, ClusterName, "User:*", "::1", OpAll, PermDeny)))
	f.Fuzz(func(t *testing.T, v []byte) {
		b, err := Unmarshal(v)
		if err != nil {
			return
		}
		if again, err := Unmarshal(Marshal(b)); err != nil || again != b {
			t.Fatalf("re-encoding %v: %v %v", b, again, err)
		}
	})
}

func benchAuthorizer() *Authorizer {
	a := New(Config{SuperUsers: []security.Principal{admin}})
	var bs []Binding
	for i := range 200 {
		n := "topic-" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		bs = append(bs, lit(ResourceTopic, n, "User:bob", "*", OpWrite, PermAllow))
		bs = append(bs, pre(ResourceTopic, n[:3+i%5], "User:carol", "*", OpRead, PermAllow))
	}
	bs = append(bs, lit(ResourceTopic, "orders", "User:alice", "*", OpWrite, PermAllow),
		pre(ResourceTopic, "ord", "User:mallory", "*", OpAll, PermDeny))
	a.Add(bs...)
	return a
}

// TestAuthorizeAllocs: a check allocates nothing (docs/design/style.md
// habit 7).
func TestAuthorizeAllocs(t *testing.T) {
	a := benchAuthorizer()
	if n := testing.AllocsPerRun(1000, func() {
		if !a.Authorize(alice, "127.0.0.1", OpWrite, ResourceTopic, "orders") {
			t.Fatal("denied")
		}
		_ = a.Authorize(bob, "127.0.0.1", OpDescribe, ResourceTopic, "orders")
		_ = a.Authorize(admin, "127.0.0.1", OpWrite, ResourceTopic, "orders")
	}); n != 0 {
		t.Fatalf("Authorize allocates %v times per run", n)
	}
}

// BenchmarkAuthorize is one check against 402 ACLs, several prefix lengths.
func BenchmarkAuthorize(b *testing.B) {
	a := benchAuthorizer()
	b.ReportAllocs()
	for b.Loop() {
		if !a.Authorize(alice, "127.0.0.1", OpWrite, ResourceTopic, "orders") {
			b.Fatal("denied")
		}
	}
}

// BenchmarkAddFlood: 5,000 ACLs added ten a CreateAcls, as the hostile
// ACL flood adds them (tests/hostile TestAdminStateFlood); per op, all
// 500 Adds.
func BenchmarkAddFlood(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		a := New(Config{})
		for i := 0; i < 5000; i += 10 {
			bs := make([]Binding, 10)
			for j := range bs {
				bs[j] = lit(ResourceTopic, "acl-flood-"+strconv.Itoa(i+j), "User:flood", "*", OpRead, PermAllow)
			}
			a.Add(bs...)
		}
	}
}

// TestReplace: Replace makes a set the stored one, indexed for Authorize,
// and reports an unchanged set (in any order, with duplicates) as no
// change.
func TestReplace(t *testing.T) {
	a := New(Config{})
	b1 := lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)
	b2 := pre(ResourceTopic, "t", "User:bob", "*", OpWrite, PermDeny)
	b3 := lit(ResourceGroup, "g", "User:alice", "*", OpRead, PermAllow)
	a.Add(b1, b2)
	if a.Replace([]Binding{b2, b1, b2}) {
		t.Error("Replace with the same set (reordered, a duplicate) reported a change")
	}
	if !a.Replace([]Binding{b2, b3}) {
		t.Fatal("Replace with another set of the same size reported no change")
	}
	all := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}
	if got := a.Describe(all); len(got) != 2 || a.Has(b1) || !a.Has(b2) || !a.Has(b3) {
		t.Fatalf("after Replace: %v", got)
	}
	if a.Authorize(alice, "h", OpRead, ResourceTopic, "t") {
		t.Error("alice still reads t after Replace dropped her ACL")
	}
	if !a.Authorize(alice, "h", OpRead, ResourceGroup, "g") {
		t.Error("alice may not read g after Replace added her ACL")
	}
	if !a.Replace(nil) || a.Len() != 0 || a.Authorize(alice, "h", OpRead, ResourceGroup, "g") {
		t.Errorf("Replace(nil): len %d", a.Len())
	}
}
