package quota

import (
	"fmt"
	"iter"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The quota configuration keys (Kafka's QuotaConfig): the first four are
// set on user and client-id entities, the last on IP entities.
const (
	KeyProducerByteRate       = "producer_byte_rate"
	KeyConsumerByteRate       = "consumer_byte_rate"
	KeyRequestPercentage      = "request_percentage"
	KeyControllerMutationRate = "controller_mutation_rate"
	KeyConnectionCreationRate = "connection_creation_rate"
)

// Entity types (Kafka's ClientQuotaEntity).
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// PartKind says what one part of a quota entity names.
type PartKind uint8

// The kinds of entity part.
const (
	// Absent: the entity has no part of this type.
	Absent PartKind = iota
	// Default: the part is the type's default (a null name on the wire,
	// `--entity-default` in kafka-configs).
	Default
	// Named: the part names one user, client id or IP.
	Named
)

// Part is one part of a quota entity.
type Part struct {
	Kind PartKind
	// Name is the user, client id or IP for a Named part, else "".
	Name string
}

func (p Part) clone() Part { return Part{p.Kind, strings.Clone(p.Name)} }

// Entity is a quota entity, as Kafka's ClientQuotaEntity: a user, a client
// id, both, or an IP, each named or the default.
type Entity struct {
	User, ClientID, IP Part
}

// Parts yields e's parts that are not Absent, with their types, in the
// order user, client-id, ip.
func (e Entity) Parts() iter.Seq2[string, Part] {
	return func(yield func(string, Part) bool) {
		for _, tp := range [...]struct {
			t string
			p Part
		}{{TypeUser, e.User}, {TypeClientID, e.ClientID}, {TypeIP, e.IP}} {
			if tp.p.Kind != Absent && !yield(tp.t, tp.p) {
				return
			}
		}
	}
}

// String renders e as Kafka's ClientQuotaEntity does in its messages.
func (e Entity) String() string {
	var parts []string
	for t, p := range e.Parts() {
		name := "null"
		if p.Kind == Named {
			name = p.Name
		}
		parts = append(parts, t+"="+name)
	}
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

// Values are one entity's quotas, by key.
type Values map[string]float64

// Key names a meter (Tracker.MeterOf) or a bucket (Buckets.TakeOf): the
// parts of the client (user principal, client id) that the quota entity
// which set the client's quota tells apart, Kafka's quota metric tags. A
// quota set on a user alone (Kafka's /config/users/<user> or
// /config/users/<default>) meters all of the user's client ids together:
// the key has AllClientIDs, and ClientID "".
type Key struct {
	User, ClientID         string
	AllUsers, AllClientIDs bool
}

// ClientKey is the key of a client metered on its own.
func ClientKey(user, clientID string) Key { return Key{User: user, ClientID: clientID} }

// keyBits gives each quota key a bit of Book.has.
var keyBits = map[string]uint32{
	KeyProducerByteRate: 1, KeyConsumerByteRate: 2, KeyRequestPercentage: 4,
	KeyControllerMutationRate: 8, KeyConnectionCreationRate: 16,
}

// Book holds the client quotas: the defaults the flags set, under the
// values stored by AlterClientQuotas. It is safe for concurrent use. The
// hot path asks Has and Version (atomic loads) and looks a client up
// (Limit) only when the quotas changed since it last did: each change
// moves Version on.
type Book struct {
	defaults map[Entity]Values

	mu      sync.RWMutex
	stored  map[Entity]Values
	entries map[Entity]Values // defaults under stored
	keys    map[string]int    // entities setting each key
	// ips is the connection creation rate of each IP entity named by an
	// address; hostIPs that of each address an IP entity named by a host
	// name resolved to (SetHosts), the lowest where several did.
	ips, hostIPs map[netip.Addr]float64
	// hosts is what each host name resolved to (SetHosts).
	hosts map[string][]netip.Addr

	has     atomic.Uint32 // keyBits of the keys some entity sets
	version atomic.Uint64
}

// NewBook returns a Book of defaults (the flags' quotas; nil for none) and
// nothing stored.
func NewBook(defaults map[Entity]Values) *Book {
	b := &Book{defaults: defaults}
	b.rebuild(map[Entity]Values{})
	return b
}

// Version moves on with every change of the quotas: a holder of a client's
// limit (a connection's cached meter) looks it up again when it differs.
func (b *Book) Version() uint64 { return b.version.Load() }

// Has reports whether some entity sets key: a gateway asks before it looks
// a client up, so that with no quota of a kind the kind costs nothing.
func (b *Book) Has(key string) bool { return b.has.Load()&keyBits[key] != 0 }

// Limit returns the quota key gives the client (user, clientID), 0 for
// none, and the key of its meter. The entity is the first that sets key,
// in Kafka's order (ClientQuotaManager's DefaultQuotaCallback):
//
//  1. /config/users/<user>/clients/<client-id>
//  2. /config/users/<user>/clients/<default>
//  3. /config/users/<user>
//  4. /config/users/<default>/clients/<client-id>
//  5. /config/users/<default>/clients/<default>
//  6. /config/users/<default>
//  7. /config/clients/<client-id>
//  8. /config/clients/<default>
func (b *Book) Limit(key, user, clientID string) (float64, Key) {
	if !b.Has(key) {
		return 0, Key{}
	}
	u, uDef := Part{Named, user}, Part{Kind: Default}
	c, cDef := Part{Named, clientID}, Part{Kind: Default}
	none := Part{}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, e := range [...]Entity{
		{User: u, ClientID: c}, {User: u, ClientID: cDef}, {User: u, ClientID: none},
		{User: uDef, ClientID: c}, {User: uDef, ClientID: cDef}, {User: uDef, ClientID: none},
		{User: none, ClientID: c}, {User: none, ClientID: cDef},
	} {
		v, ok := b.entries[e][key]
		if !ok {
			continue
		}
		k := Key{User: user, ClientID: clientID}
		if e.ClientID.Kind == Absent {
			k.ClientID, k.AllClientIDs = "", true
		}
		if e.User.Kind == Absent {
			k.User, k.AllUsers = "", true
		}
		return v, k
	}
	return 0, Key{}
}

// IPLimit returns the connection creation rate of ip: its own entity's,
// else the default IP entity's; 0 for none.
func (b *Book) IPLimit(ip netip.Addr) float64 {
	if !b.Has(KeyConnectionCreationRate) {
		return 0
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if v, ok := b.ips[ip.Unmap()]; ok {
		return v
	}
	if v, ok := b.hostIPs[ip.Unmap()]; ok {
		return v
	}
	return b.entries[Entity{IP: Part{Kind: Default}}][KeyConnectionCreationRate]
}

// EntityValues is one entity and its quotas.
type EntityValues struct {
	Entity Entity
	Values Values
}

// Entries returns every entity with its values (copies), sorted by entity.
func (b *Book) Entries() []EntityValues {
	b.mu.RLock()
	out := make([]EntityValues, 0, len(b.entries))
	for e, vs := range b.entries {
		out = append(out, EntityValues{e, maps.Clone(vs)})
	}
	b.mu.RUnlock()
	slices.SortFunc(out, func(x, y EntityValues) int { return strings.Compare(x.Entity.storeKey(), y.Entity.storeKey()) })
	return out
}

// StoredEntities is the number of entities with stored values.
func (b *Book) StoredEntities() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.stored)
}

// IsStored reports whether e has stored values.
func (b *Book) IsStored(e Entity) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.stored[e] != nil
}

// Stored returns e's stored quotas (a copy; nil for none), without the
// flags' defaults.
func (b *Book) Stored(e Entity) Values {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return maps.Clone(b.stored[e])
}

// SetEntity replaces e's stored quotas with vs (none when empty), as
// AlterClientQuotas just stored them: O(keys), not a rebuild. e's names and
// vs's keys may alias a request frame: they are copied when kept.
func (b *Book) SetEntity(e Entity, vs Values) {
	e = Entity{User: e.User.clone(), ClientID: e.ClientID.clone(), IP: e.IP.clone()}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.stored[e]
	if maps.Equal(old, vs) {
		return
	}
	if len(vs) == 0 {
		delete(b.stored, e)
	} else {
		kept := make(Values, len(vs))
		for k, v := range vs {
			kept[strings.Clone(k)] = v
		}
		b.stored[e] = kept
	}
	for k := range old {
		if _, ok := vs[k]; !ok {
			b.refresh(e, k)
		}
	}
	for k := range b.stored[e] {
		b.refresh(e, k)
	}
	b.version.Add(1)
}

// refresh sets e's merged value of key from the defaults and stored; under
// mu.
func (b *Book) refresh(e Entity, key string) {
	v, ok := b.stored[e][key]
	if !ok {
		v, ok = b.defaults[e][key]
	}
	_, had := b.entries[e][key]
	switch {
	case ok:
		if b.entries[e] == nil {
			b.entries[e] = Values{}
		}
		b.entries[e][key] = v
		if !had {
			b.keys[key]++
		}
	case had:
		delete(b.entries[e], key)
		if len(b.entries[e]) == 0 {
			delete(b.entries, e)
		}
		b.keys[key]--
	}
	if e.IP.Kind == Named && key == KeyConnectionCreationRate {
		if a, err := netip.ParseAddr(e.IP.Name); err != nil {
			b.mapHostsLocked()
		} else if ok {
			b.ips[a.Unmap()] = v
		} else {
			delete(b.ips, a.Unmap())
		}
	}
	var has uint32
	for k, n := range b.keys {
		if n > 0 {
			has |= keyBits[k]
		}
	}
	b.has.Store(has)
}

// Set replaces the stored quotas with stored (as read again from the
// system store; each stored value overrides the default of its entity and
// key) and reports whether they changed.
func (b *Book) Set(stored map[Entity]Values) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stored != nil && maps.EqualFunc(b.stored, stored, func(x, y Values) bool { return maps.Equal(x, y) }) {
		return false
	}
	b.rebuild(stored)
	b.version.Add(1)
	return true
}

// rebuild makes the book's maps anew for stored; under mu (or before the
// book is shared).
func (b *Book) rebuild(stored map[Entity]Values) {
	b.stored = map[Entity]Values{}
	for e, vs := range stored {
		if len(vs) > 0 {
			b.stored[e] = maps.Clone(vs)
		}
	}
	b.entries, b.keys, b.ips, b.hostIPs = map[Entity]Values{}, map[string]int{}, map[netip.Addr]float64{}, map[netip.Addr]float64{}
	for _, src := range []map[Entity]Values{b.defaults, b.stored} {
		for e, vs := range src {
			for k := range vs {
				b.refresh(e, k)
			}
		}
	}
}

// HostNames returns the names of the IP entities named by a host name
// rather than an address that set a connection_creation_rate, sorted: the
// names the caller resolves for SetHosts.
func (b *Book) HostNames() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var names []string
	for e, vs := range b.entries {
		if _, ok := vs[KeyConnectionCreationRate]; ok && e.IP.Kind == Named && !isAddr(e.IP.Name) {
			names = append(names, e.IP.Name)
		}
	}
	slices.Sort(names)
	return names
}

// SetHosts sets what host names resolved to: an IP entity named by a host
// name applies its connection_creation_rate to those addresses (Kafka's
// ClientQuotaMetadataManager resolves the name with InetAddress.getByName
// when it applies the quota). An entity named by an address the same
// connection has comes first.
func (b *Book) SetHosts(resolved map[string][]netip.Addr) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hosts = resolved
	b.mapHostsLocked()
}

// mapHostsLocked maps the resolved addresses of the IP entities named by
// host names to their rates anew. Under mu.
func (b *Book) mapHostsLocked() {
	clear(b.hostIPs)
	for name, addrs := range b.hosts {
		v, ok := b.entries[Entity{IP: Part{Kind: Named, Name: name}}][KeyConnectionCreationRate]
		if !ok {
			continue
		}
		for _, a := range addrs {
			if old, seen := b.hostIPs[a.Unmap()]; !seen || v < old {
				b.hostIPs[a.Unmap()] = v
			}
		}
	}
}

// isAddr reports whether name is an IP address.
func isAddr(name string) bool {
	_, err := netip.ParseAddr(name)
	return err == nil
}

// StoreKey encodes e and a quota key as one key of a key-value store:
// e's parts in the order user, client-id, ip, each its type, with "=" and
// the name query-escaped when named, joined by "&", then "|" and the
// quota key. ParseStoreKey reverses it.
func StoreKey(e Entity, key string) string { return e.storeKey() + "|" + key }

func (e Entity) storeKey() string {
	var parts []string
	for t, p := range e.Parts() {
		if p.Kind == Named {
			t += "=" + escape(p.Name)
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "&")
}

// ParseStoreKey decodes a StoreKey.
func ParseStoreKey(s string) (Entity, string, error) {
	ent, key, ok := strings.Cut(s, "|")
	if !ok || key == "" || ent == "" {
		return Entity{}, "", fmt.Errorf("quota store key %q: want entity|key", s)
	}
	var e Entity
	for part := range strings.SplitSeq(ent, "&") {
		t, name, named := strings.Cut(part, "=")
		p := Part{Kind: Default}
		if named {
			n, err := unescape(name)
			if err != nil || n == "" {
				return Entity{}, "", fmt.Errorf("quota store key %q: bad name %q", s, name)
			}
			p = Part{Named, n}
		}
		var dst *Part
		switch t {
		case TypeUser:
			dst = &e.User
		case TypeClientID:
			dst = &e.ClientID
		case TypeIP:
			dst = &e.IP
		default:
			return Entity{}, "", fmt.Errorf("quota store key %q: unknown entity type %q", s, t)
		}
		if dst.Kind != Absent {
			return Entity{}, "", fmt.Errorf("quota store key %q: type %q twice", s, t)
		}
		*dst = p
	}
	return e, key, nil
}

// escape percent-encodes the bytes of s that a store key gives a meaning
// (and '%' itself, and every byte outside printable ASCII).
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == '&' || c == '=' || c == '|' || c < 0x21 || c > 0x7e {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated escape")
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", err
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
