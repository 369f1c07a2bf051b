package quota

import (
	"fmt"
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

// Entity is a quota entity, as Kafka's ClientQuotaEntity: a user, a client
// id, both, or an IP, each named or the default.
type Entity struct {
	User, ClientID, IP Part
}

// String renders e as Kafka's ClientQuotaEntity does in its messages.
func (e Entity) String() string {
	var parts []string
	for _, p := range []struct {
		t string
		p Part
	}{{TypeUser, e.User}, {TypeClientID, e.ClientID}, {TypeIP, e.IP}} {
		switch p.p.Kind {
		case Default:
			parts = append(parts, p.t+"=null")
		case Named:
			parts = append(parts, p.t+"="+p.p.Name)
		}
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
// the key has AllClients, and ClientID "".
type Key struct {
	User, ClientID         string
	AllUsers, AllClientIDs bool
}

// ClientKey is the key of a client metered on its own.
func ClientKey(user, clientID string) Key { return Key{User: user, ClientID: clientID} }

// Table is one immutable state of the client quotas: the entities and their
// values, as the flags set them (the defaults) under what AlterClientQuotas
// stored. Book holds the current one.
type Table struct {
	entries map[Entity]Values
	has     map[string]bool // keys set on some entity
	// ips is the connection creation rate of each IP entity named by an
	// address (a host name applies to no connection).
	ips map[netip.Addr]float64
}

// Has reports whether some entity sets key: a gateway asks before it looks
// a client up, so that with no quota of a kind the kind costs nothing.
func (t *Table) Has(key string) bool { return t != nil && t.has[key] }

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
func (t *Table) Limit(key, user, clientID string) (float64, Key) {
	if !t.Has(key) {
		return 0, Key{}
	}
	u, uDef := Part{Named, user}, Part{Kind: Default}
	c, cDef := Part{Named, clientID}, Part{Kind: Default}
	none := Part{}
	for _, e := range [...]Entity{
		{User: u, ClientID: c}, {User: u, ClientID: cDef}, {User: u, ClientID: none},
		{User: uDef, ClientID: c}, {User: uDef, ClientID: cDef}, {User: uDef, ClientID: none},
		{User: none, ClientID: c}, {User: none, ClientID: cDef},
	} {
		v, ok := t.entries[e][key]
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
func (t *Table) IPLimit(ip netip.Addr) float64 {
	if !t.Has(KeyConnectionCreationRate) {
		return 0
	}
	if v, ok := t.ips[ip.Unmap()]; ok {
		return v
	}
	return t.entries[Entity{IP: Part{Kind: Default}}][KeyConnectionCreationRate]
}

// Entries returns every entity with its values, sorted by entity (the
// maps are the table's: read only).
func (t *Table) Entries() ([]Entity, map[Entity]Values) {
	es := slices.Collect(maps.Keys(t.entries))
	slices.SortFunc(es, func(a, b Entity) int { return strings.Compare(a.storeKey(), b.storeKey()) })
	return es, t.entries
}

// Values returns e's quotas (nil for none; read only).
func (t *Table) Values(e Entity) Values { return t.entries[e] }

// Book holds the client quotas: the defaults the flags set, under the
// values stored by AlterClientQuotas (Set replaces them). It is safe for
// concurrent use; Table is one atomic load.
type Book struct {
	defaults map[Entity]Values
	mu       sync.Mutex // serializes Set
	cur      atomic.Pointer[Table]
}

// NewBook returns a Book of defaults (the flags' quotas; nil for none) and
// nothing stored.
func NewBook(defaults map[Entity]Values) *Book {
	b := &Book{defaults: defaults}
	b.Set(nil)
	return b
}

// Table returns the current quotas.
func (b *Book) Table() *Table { return b.cur.Load() }

// Set replaces the stored quotas with stored (each stored value overrides
// the default of its entity and key) and reports whether the table
// changed: a holder of the old table (a connection's cached meter) sees a
// new pointer and looks its client up again.
func (b *Book) Set(stored map[Entity]Values) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := &Table{entries: map[Entity]Values{}, has: map[string]bool{}, ips: map[netip.Addr]float64{}}
	for _, src := range []map[Entity]Values{b.defaults, stored} {
		for e, vs := range src {
			for k, v := range vs {
				if t.entries[e] == nil {
					t.entries[e] = Values{}
				}
				t.entries[e][k] = v
				t.has[k] = true
				if a, err := netip.ParseAddr(e.IP.Name); e.IP.Kind == Named && k == KeyConnectionCreationRate && err == nil {
					t.ips[a.Unmap()] = v
				}
			}
		}
	}
	if old := b.cur.Load(); old != nil && tablesEqual(old, t) {
		return false
	}
	b.cur.Store(t)
	return true
}

func tablesEqual(a, b *Table) bool {
	return maps.EqualFunc(a.entries, b.entries, func(x, y Values) bool { return maps.Equal(x, y) })
}

// StoreKey encodes e and a quota key as one key of a key-value store:
// e's parts in the order user, client-id, ip, each its type, with "=" and
// the name query-escaped when named, joined by "&", then "|" and the
// quota key. ParseStoreKey reverses it.
func StoreKey(e Entity, key string) string { return e.storeKey() + "|" + key }

func (e Entity) storeKey() string {
	var parts []string
	for _, p := range []struct {
		t string
		p Part
	}{{TypeUser, e.User}, {TypeClientID, e.ClientID}, {TypeIP, e.IP}} {
		switch p.p.Kind {
		case Default:
			parts = append(parts, p.t)
		case Named:
			parts = append(parts, p.t+"="+escape(p.p.Name))
		}
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
