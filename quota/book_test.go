package quota

import (
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"
)

func named(s string) Part { return Part{Kind: Named, Name: s} }

var def = Part{Kind: Default}

// TestLimitPrecedence: each of Kafka's eight levels wins over the ones
// after it (ClientQuotaManager's DefaultQuotaCallback), for the key asked
// only, and the meter key keeps the parts of the entity that set it.
func TestLimitPrecedence(t *testing.T) {
	levels := []Entity{
		{User: named("u"), ClientID: named("c")},
		{User: named("u"), ClientID: def},
		{User: named("u")},
		{User: def, ClientID: named("c")},
		{User: def, ClientID: def},
		{User: def},
		{ClientID: named("c")},
		{ClientID: def},
	}
	keys := []Key{
		{User: "u", ClientID: "c"}, {User: "u", ClientID: "c"}, {User: "u", AllClientIDs: true},
		{User: "u", ClientID: "c"}, {User: "u", ClientID: "c"}, {User: "u", AllClientIDs: true},
		{ClientID: "c", AllUsers: true}, {ClientID: "c", AllUsers: true},
	}
	for first := range levels {
		stored := map[Entity]Values{}
		for i := first; i < len(levels); i++ {
			stored[levels[i]] = Values{KeyRequestPercentage: float64(i + 1)}
		}
		// Another key on a higher level does not hide this one.
		if first > 0 {
			stored[levels[0]] = Values{KeyProducerByteRate: 99}
		}
		b := NewBook(nil)
		b.Set(stored)
		got, k := b.Limit(KeyRequestPercentage, "u", "c")
		if got != float64(first+1) || k != keys[first] {
			t.Errorf("levels %d..8: limit %v key %+v, want %v %+v", first+1, got, k, first+1, keys[first])
		}
		// Another user and client id see only the default levels (5, 6
		// and 8).
		want := 8.0
		for _, l := range []int{4, 5} {
			if l >= first {
				want = float64(l + 1)
				break
			}
		}
		if got, _ := b.Limit(KeyRequestPercentage, "v", "d"); got != want {
			t.Errorf("levels %d..8: another client's limit %v, want %v", first+1, got, want)
		}
	}
	if got, _ := NewBook(nil).Limit(KeyRequestPercentage, "u", "c"); got != 0 {
		t.Errorf("no quotas: limit %v", got)
	}
}

// TestBookDefaults: the flags' defaults hold until a stored value of the
// same entity and key overrides them, and come back when it is removed;
// Set reports only real changes.
func TestBookDefaults(t *testing.T) {
	dflt := Entity{User: def, ClientID: def}
	b := NewBook(map[Entity]Values{dflt: {KeyProducerByteRate: 100, KeyConsumerByteRate: 200}})
	v0 := b.Version()
	if b.Set(nil) || b.Version() != v0 {
		t.Fatal("setting nothing changed the table")
	}
	if !b.Set(map[Entity]Values{dflt: {KeyProducerByteRate: 5}}) {
		t.Fatal("an override did not change the table")
	}
	if p, _ := b.Limit(KeyProducerByteRate, "u", "c"); p != 5 {
		t.Fatalf("producer_byte_rate %v, want the stored 5", p)
	}
	if c, _ := b.Limit(KeyConsumerByteRate, "u", "c"); c != 200 {
		t.Fatalf("consumer_byte_rate %v, want the default 200", c)
	}
	b.Set(nil)
	if p, _ := b.Limit(KeyProducerByteRate, "u", "c"); p != 100 {
		t.Fatalf("producer_byte_rate %v after removal, want the default 100", p)
	}
	if b.Has(KeyRequestPercentage) {
		t.Fatal("Has(request_percentage) with none set")
	}
}

// TestIPLimit: an address's own entity, in any spelling of the address,
// over the default IP entity.
func TestIPLimit(t *testing.T) {
	b := NewBook(map[Entity]Values{{IP: def}: {KeyConnectionCreationRate: 40}})
	b.Set(map[Entity]Values{{IP: named("10.0.0.1")}: {KeyConnectionCreationRate: 7}, {IP: named("::1")}: {KeyConnectionCreationRate: 3}})
	for _, c := range []struct {
		ip   string
		want float64
	}{{"10.0.0.1", 7}, {"::ffff:10.0.0.1", 7}, {"10.0.0.2", 40}, {"0:0::1", 3}} {
		if got := b.IPLimit(netip.MustParseAddr(c.ip)); got != c.want {
			t.Errorf("IPLimit(%s) = %v, want %v", c.ip, got, c.want)
		}
	}
	if got := NewBook(nil).IPLimit(netip.MustParseAddr("10.0.0.1")); got != 0 {
		t.Errorf("no IP quota: %v", got)
	}
}

// TestIPLimitHosts: an IP entity named by a host name applies to the
// addresses SetHosts gave it; an entity named by the address comes first,
// the lowest rate where two names share an address, and removing the
// entity (or the name's addresses) ends it.
func TestIPLimitHosts(t *testing.T) {
	b := NewBook(map[Entity]Values{{IP: def}: {KeyConnectionCreationRate: 40}})
	b.Set(map[Entity]Values{{IP: named("db.local")}: {KeyConnectionCreationRate: 5}, {IP: named("alias.local")}: {KeyConnectionCreationRate: 4},
		{IP: named("10.0.0.3")}: {KeyConnectionCreationRate: 9}, {IP: named("gone.local")}: {KeyRequestPercentage: 50}})
	if got := b.HostNames(); !slices.Equal(got, []string{"alias.local", "db.local"}) {
		t.Fatalf("HostNames() = %v", got)
	}
	a := netip.MustParseAddr
	if got := b.IPLimit(a("10.0.0.1")); got != 40 {
		t.Fatalf("unresolved: IPLimit = %v, want the default 40", got)
	}
	b.SetHosts(map[string][]netip.Addr{"db.local": {a("10.0.0.1"), a("10.0.0.2"), a("10.0.0.3")}, "alias.local": {a("10.0.0.2")}})
	for _, c := range []struct {
		ip   string
		want float64
	}{{"10.0.0.1", 5}, {"::ffff:10.0.0.1", 5}, {"10.0.0.2", 4}, {"10.0.0.3", 9}, {"10.0.0.4", 40}} {
		if got := b.IPLimit(a(c.ip)); got != c.want {
			t.Errorf("IPLimit(%s) = %v, want %v", c.ip, got, c.want)
		}
	}
	b.SetEntity(Entity{IP: named("db.local")}, nil)
	if got := b.IPLimit(a("10.0.0.1")); got != 40 {
		t.Errorf("db.local removed: IPLimit = %v, want 40", got)
	}
	if got := b.IPLimit(a("10.0.0.2")); got != 4 {
		t.Errorf("db.local removed: IPLimit(alias's address) = %v, want 4", got)
	}
	b.SetHosts(nil)
	if got := b.IPLimit(a("10.0.0.2")); got != 40 {
		t.Errorf("no addresses: IPLimit = %v, want 40", got)
	}
}

// TestStoreKeyRoundTrip: every entity shape, with names holding the
// encoding's own bytes, parses back; malformed keys are errors.
func TestStoreKeyRoundTrip(t *testing.T) {
	for _, e := range []Entity{
		{User: named("alice")}, {User: def, ClientID: named("a&b=c|d%e f\x00é")}, {ClientID: def},
		{IP: named("10.0.0.1")}, {IP: def}, {User: named("CN=x,O=y"), ClientID: def},
	} {
		got, key, err := ParseStoreKey(StoreKey(e, KeyRequestPercentage))
		if err != nil || got != e || key != KeyRequestPercentage {
			t.Errorf("%v: parsed %v %q %v", e, got, key, err)
		}
	}
	for _, bad := range []string{"", "user", "|k", "user|", "group=x|k", "user&user|k", "user=%4|k", "user=%zz|k", "user=|k"} {
		if _, _, err := ParseStoreKey(bad); err == nil {
			t.Errorf("ParseStoreKey(%q): no error", bad)
		}
	}
}

// TestMeterOfFollowsLimit: a meter's quota is the last limit it was asked
// with, so a changed quota applies to the usage already measured.
func TestMeterOfFollowsLimit(t *testing.T) {
	tr := NewTracker(PerSecond, 11, 100*time.Millisecond, 0)
	now := time.Now()
	k := ClientKey("u", "c")
	m := tr.MeterOf(k, 1000, now)
	m.Add(2000, now) // 2,000 over the minimum span of 1 s: 2,000 a second
	if d := m.Throttle(now); d <= 0 {
		t.Fatal("2,000 a second under a quota of 1,000: no throttle")
	}
	if d := tr.MeterOf(k, 10_000, now).Throttle(now); d != 0 {
		t.Fatalf("raised to 10,000: throttle %v", d)
	}
	if tr.MeterOf(k, 1, now) != m {
		t.Fatal("the same key got another meter")
	}
	b := NewBucketSet(11, 100*time.Millisecond, 0)
	if ok, _ := b.TakeOf(k, 10, 1, true, now); !ok {
		t.Fatal("a full bucket refused")
	}
	// Burst 10 × 1.1 s = 11: 12 more leave it below zero.
	if _, owed := b.TakeOf(k, 10, 12, false, now); owed <= 0 {
		t.Fatal("13 mutations against a burst of 11: nothing owed")
	}
	if ok, _ := b.TakeOf(k, 1000, 1, true, now); ok {
		t.Fatal("a bucket below zero admitted a strict mutation after its rate was raised")
	}
	if ok, _ := b.TakeOf(k, 0, 1, true, now); !ok {
		t.Fatal("no quota (rate 0) refused")
	}
}

// FuzzParseStoreKey: any stored key either fails to parse or parses to an
// entity and key that encode and parse back to themselves.
func FuzzParseStoreKey(f *testing.F) {
	for _, s := range []string{"user=alice|request_percentage", "user&client-id=a%26b|producer_byte_rate", "ip=10.0.0.1|connection_creation_rate", "client-id|k", "user=%|k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, k, err := ParseStoreKey(s)
		if err != nil {
			return
		}
		e2, k2, err := ParseStoreKey(StoreKey(e, k))
		if err != nil || e2 != e || k2 != k {
			t.Fatalf("%q: parsed %v %q, re-encoded and parsed %v %q %v", s, e, k, e2, k2, err)
		}
	})
}

// TestBookSetEntity: an alteration applies at once and alone, moves
// Version on only when it changes something, and a removal brings the
// default back.
func TestBookSetEntity(t *testing.T) {
	dflt := Entity{User: def, ClientID: def}
	b := NewBook(map[Entity]Values{dflt: {KeyRequestPercentage: 10}})
	alice := Entity{User: named("alice")}
	v0 := b.Version()
	b.SetEntity(alice, Values{KeyRequestPercentage: 20, KeyProducerByteRate: 100})
	if b.Version() == v0 || b.StoredEntities() != 1 || !b.IsStored(alice) {
		t.Fatalf("after SetEntity: version %d→%d, %d stored", v0, b.Version(), b.StoredEntities())
	}
	if got, k := b.Limit(KeyRequestPercentage, "alice", "x"); got != 20 || k != (Key{User: "alice", AllClientIDs: true}) {
		t.Fatalf("alice: %v %+v", got, k)
	}
	v1 := b.Version()
	b.SetEntity(alice, Values{KeyRequestPercentage: 20, KeyProducerByteRate: 100})
	b.SetEntity(Entity{User: named("bob")}, nil) // not stored
	if b.Version() != v1 {
		t.Fatal("a no-op moved the version on")
	}
	b.SetEntity(alice, Values{KeyRequestPercentage: 20}) // producer_byte_rate removed
	if got, _ := b.Limit(KeyProducerByteRate, "alice", "x"); got != 0 || b.Has(KeyProducerByteRate) {
		t.Fatalf("alice's removed producer_byte_rate: %v", got)
	}
	if got := b.Stored(alice); !maps.Equal(got, Values{KeyRequestPercentage: 20}) {
		t.Fatalf("Stored(alice) = %v", got)
	}
	b.SetEntity(dflt, Values{KeyRequestPercentage: 30})
	if got, _ := b.Limit(KeyRequestPercentage, "bob", "x"); got != 30 {
		t.Fatalf("bob under the stored default: %v", got)
	}
	b.SetEntity(dflt, nil)
	b.SetEntity(alice, Values{})
	if got, _ := b.Limit(KeyRequestPercentage, "alice", "x"); got != 10 || b.StoredEntities() != 0 {
		t.Fatalf("after the removals: alice %v, %d stored; want the flag's 10 and none", got, b.StoredEntities())
	}
	b.SetEntity(Entity{IP: named("10.0.0.9")}, Values{KeyConnectionCreationRate: 4})
	if !b.Has(KeyConnectionCreationRate) || b.IPLimit(netip.MustParseAddr("10.0.0.9")) != 4 {
		t.Fatal("an IP's rate set did not apply")
	}
	b.SetEntity(Entity{IP: named("10.0.0.9")}, nil)
	if b.Has(KeyConnectionCreationRate) || b.IPLimit(netip.MustParseAddr("10.0.0.9")) != 0 {
		t.Fatal("an IP's rate removed still applies")
	}
}
