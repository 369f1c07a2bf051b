package acl

// The authorizer: Kafka's StandardAuthorizer decision rules
// (docs/design/security.md §6) over an index built for cheap checks.
//
// The index is an immutable snapshot behind an atomic pointer: a check loads
// it and reads plain maps, taking no lock and allocating nothing; a change
// (CreateAcls, DeleteAcls, a load at start) makes a new snapshot and swaps
// it in, sharing with the old one all it does not alter (index.go). Per
// resource type the snapshot holds the literal ACLs by name (the "*"
// wildcard among them) and the prefixed ACLs by prefix together with the
// distinct prefix lengths, so finding every prefix ACL of a name is one map
// lookup per length in use, not a scan.

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/kiggy-io/kiggy/security"
)

// Config configures an Authorizer.
type Config struct {
	// SuperUsers may do anything, whatever the ACLs say (Kafka super.users).
	SuperUsers []security.Principal
	// AllowIfNoACL allows a request on a resource that no ACL names at all
	// (Kafka allow.everyone.if.no.acl.found; default false).
	AllowIfNoACL bool
}

// entry is one ACL of the index, its principal parsed for comparison
// without allocation.
type entry struct {
	principal security.Principal
	host      string
	op        Operation
	perm      Permission
}

// typeIndex holds one resource type's ACLs.
type typeIndex struct {
	literal  nameIndex
	prefixed nameIndex
	// prefixLens are the distinct lengths of the keys of prefixed,
	// ascending.
	prefixLens []int
}

// snapshot is an immutable state of the ACLs.
type snapshot struct {
	bindings bindingList
	types    [numResourceTypes]typeIndex
}

// Authorizer decides whether a principal may do an operation on a resource.
// It is safe for concurrent use; checks never block on changes.
type Authorizer struct {
	super        map[security.Principal]struct{}
	allowIfNoACL bool

	mu   sync.Mutex // serializes changes
	snap atomic.Pointer[snapshot]
}

// New returns an Authorizer with no ACLs.
func New(cfg Config) *Authorizer {
	a := &Authorizer{super: map[security.Principal]struct{}{}, allowIfNoACL: cfg.AllowIfNoACL}
	for _, p := range cfg.SuperUsers {
		a.super[p] = struct{}{}
	}
	a.snap.Store(build(nil))
	return a
}

// IsSuperUser reports whether p is one of Config.SuperUsers.
func (a *Authorizer) IsSuperUser(p security.Principal) bool {
	_, ok := a.super[p]
	return ok
}

// Authorize reports whether principal p, connected from host (an IP address
// without port), may do op on the resource of type rt called name. It
// follows Kafka's StandardAuthorizer: super users may do anything; otherwise
// the ACLs that apply to the resource are the literal ones of its name, the
// literal wildcard "*" and the prefixed ones whose prefix starts the name;
// among those that name p (or User:*), host (or *) and op (or ALL; for an
// ALLOW ACL also an operation that implies op: READ, WRITE, DELETE and ALTER
// imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS), a DENY wins, then
// an ALLOW allows; with no ACL on the resource at all, Config.AllowIfNoACL
// decides; otherwise it is denied.
func (a *Authorizer) Authorize(p security.Principal, host string, op Operation, rt ResourceType, name string) bool {
	if _, ok := a.super[p]; ok {
		return true
	}
	if rt < 0 || int(rt) >= numResourceTypes {
		return false
	}
	ti := &a.snap.Load().types[rt]
	found, allowed := false, false
	if es, ok := ti.literal.get(name); ok {
		found = true
		switch decide(es, p, host, op) {
		case PermDeny:
			return false
		case PermAllow:
			allowed = true
		}
	}
	if name != Wildcard {
		if es, ok := ti.literal.get(Wildcard); ok {
			found = true
			switch decide(es, p, host, op) {
			case PermDeny:
				return false
			case PermAllow:
				allowed = true
			}
		}
	}
	for _, n := range ti.prefixLens {
		if n > len(name) {
			break
		}
		if es, ok := ti.prefixed.get(name[:n]); ok {
			found = true
			switch decide(es, p, host, op) {
			case PermDeny:
				return false
			case PermAllow:
				allowed = true
			}
		}
	}
	if !found {
		return a.allowIfNoACL
	}
	return allowed
}

// decide returns PermDeny when a DENY of es applies to (p, host, op),
// else PermAllow when an ALLOW does, else PermUnknown.
func decide(es []entry, p security.Principal, host string, op Operation) Permission {
	verdict := PermUnknown
	for i := range es {
		e := &es[i]
		if !principalMatches(e.principal, p) || (e.host != Wildcard && e.host != host) {
			continue
		}
		if e.perm == PermDeny {
			if e.op == OpAll || e.op == op {
				return PermDeny
			}
			continue
		}
		if e.op == OpAll || e.op == op || implies(e.op, op) {
			verdict = PermAllow
		}
	}
	return verdict
}

// principalIs reports whether s is p's "Type:Name" form, without building it.
func principalIs(s string, p security.Principal) bool {
	return len(s) == len(p.Type)+1+len(p.Name) && s[:len(p.Type)] == p.Type && s[len(p.Type)] == ':' && s[len(p.Type)+1:] == p.Name
}

func principalMatches(acl, p security.Principal) bool {
	return acl == p || (acl.Type == security.UserType && acl.Name == Wildcard)
}

// implies reports whether an ALLOW of have also allows want (Kafka's
// implied operations; a DENY implies nothing).
func implies(have, want Operation) bool {
	switch want {
	case OpDescribe:
		return have == OpRead || have == OpWrite || have == OpDelete || have == OpAlter
	case OpDescribeConfigs:
		return have == OpAlterConfigs
	}
	return false
}

// AuthorizeAny reports whether p may do op on at least one resource of type
// rt: Kafka's Authorizer.authorizeByResourceType, which InitProducerId uses
// ("WRITE on any topic" lets a producer be idempotent). Allowed when p may
// do op on a resource no ACL names specially (super users; AllowIfNoACL;
// the wildcard), else when an ALLOW ACL of p (literal or prefixed) is not
// shadowed by a DENY on the same literal name or on a prefix of it; a DENY
// on the literal wildcard denies outright.
func (a *Authorizer) AuthorizeAny(p security.Principal, host string, op Operation, rt ResourceType) bool {
	// Kafka checks a hard-coded name first, so that super users and
	// allow.everyone.if.no.acl.found pass regardless of DENY ACLs.
	if a.Authorize(p, host, op, rt, "hardcode") {
		return true
	}
	if rt < 0 || int(rt) >= numResourceTypes {
		return false
	}
	snap := a.snap.Load()
	applies := func(b *Binding) bool {
		if b.ResourceType != rt || (b.Host != Wildcard && b.Host != host) {
			return false
		}
		if b.Principal != WildcardPrincipal && !principalIs(b.Principal, p) {
			return false
		}
		return b.Operation == op || b.Operation == OpAll
	}
	denied := func(name string, pt PatternType) bool {
		for d := range snap.bindings.all() {
			if d.Permission != PermDeny || !applies(d) {
				continue
			}
			if d.PatternType == PatternLiteral && pt == PatternLiteral && d.ResourceName == name {
				return true
			}
			if d.PatternType == PatternPrefixed && len(d.ResourceName) <= len(name) && name[:len(d.ResourceName)] == d.ResourceName {
				return true
			}
		}
		return false
	}
	for b := range snap.bindings.all() {
		if b.Permission == PermDeny && applies(b) && b.PatternType == PatternLiteral && b.ResourceName == Wildcard {
			return false
		}
	}
	for b := range snap.bindings.all() {
		if b.Permission != PermAllow || !applies(b) {
			continue
		}
		if b.PatternType == PatternLiteral && b.ResourceName == Wildcard {
			return true
		}
		if !denied(b.ResourceName, b.PatternType) {
			return true
		}
	}
	return false
}

// Add stores bindings (each must Validate); bindings already present are
// left as they are, as Kafka does. It returns the bindings that were new,
// sorted.
func (a *Authorizer) Add(bs ...Binding) []Binding {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.snap.Load()
	// Sorted and distinct first: the load at start adds every stored ACL
	// in one call, so finding duplicates must not be quadratic.
	added := slices.SortedFunc(slices.Values(bs), compareBindings)
	added = slices.CompactFunc(added, func(x, y Binding) bool { return compareBindings(x, y) == 0 })
	added = slices.DeleteFunc(added, cur.bindings.has)
	if len(added) > 0 {
		a.snap.Store(cur.with(cur.bindings.with(added), added))
	}
	return added
}

// Remove deletes the bindings f matches and returns them.
func (a *Authorizer) Remove(f Filter) []Binding {
	a.mu.Lock()
	defer a.mu.Unlock()
	var removed, kept []Binding
	for b := range a.snap.Load().bindings.all() {
		if f.Matches(b) {
			removed = append(removed, *b)
		} else {
			kept = append(kept, *b)
		}
	}
	if len(removed) > 0 {
		a.snap.Store(build(kept))
	}
	return removed
}

// RemoveBindings deletes the bindings of bs that are stored, in one
// re-index however many they are, and returns how many it deleted.
func (a *Authorizer) RemoveBindings(bs []Binding) int {
	if len(bs) == 0 {
		return 0
	}
	gone := make(map[Binding]bool, len(bs))
	for _, b := range bs {
		gone[b] = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var kept []Binding
	removed := 0
	for b := range a.snap.Load().bindings.all() {
		if gone[*b] {
			removed++
		} else {
			kept = append(kept, *b)
		}
	}
	if removed > 0 {
		a.snap.Store(build(kept))
	}
	return removed
}

// Replace makes bs (each must Validate) the stored bindings: what another
// gateway on the same store added and deleted (the shared state refresh).
// It reports whether anything changed; an unchanged set keeps the index.
func (a *Authorizer) Replace(bs []Binding) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	next := slices.SortedFunc(slices.Values(bs), compareBindings)
	next = slices.CompactFunc(next, func(x, y Binding) bool { return compareBindings(x, y) == 0 })
	cur := a.snap.Load()
	if cur.bindings.n == len(next) {
		same := true
		for _, b := range next {
			if !cur.bindings.has(b) {
				same = false
				break
			}
		}
		if same {
			return false
		}
	}
	a.snap.Store(build(next))
	return true
}

// Restore puts back bindings that Remove took out (after a failed store
// write), keeping those present.
func (a *Authorizer) Restore(bs []Binding) { a.Add(bs...) }

// Describe returns the bindings f matches, sorted by resource pattern.
func (a *Authorizer) Describe(f Filter) []Binding {
	var out []Binding
	for b := range a.snap.Load().bindings.all() {
		if f.Matches(b) {
			out = append(out, *b)
		}
	}
	return out
}

// Has reports whether b is stored.
func (a *Authorizer) Has(b Binding) bool {
	return a.snap.Load().bindings.has(b)
}

// Len returns the number of ACLs.
func (a *Authorizer) Len() int { return a.snap.Load().bindings.n }

// compareBindings orders bindings by resource type, pattern type, name, then
// entry, so that the bindings of one resource pattern are adjacent.
func compareBindings(x, y Binding) int {
	switch {
	case x.ResourceType != y.ResourceType:
		return int(x.ResourceType) - int(y.ResourceType)
	case x.PatternType != y.PatternType:
		return int(x.PatternType) - int(y.PatternType)
	case x.ResourceName != y.ResourceName:
		return cmpString(x.ResourceName, y.ResourceName)
	case x.Principal != y.Principal:
		return cmpString(x.Principal, y.Principal)
	case x.Host != y.Host:
		return cmpString(x.Host, y.Host)
	case x.Operation != y.Operation:
		return int(x.Operation) - int(y.Operation)
	}
	return int(x.Permission) - int(y.Permission)
}

func cmpString(a, b string) int {
	if a < b {
		return -1
	}
	return 1
}

// with returns a snapshot of bindings, which are s's and added, indexing
// only added: the shards of the name indexes they touch are copied (a
// stored snapshot is never changed), everything else is shared (decide
// does not depend on the entries' order).
func (s *snapshot) with(bindings bindingList, added []Binding) *snapshot {
	n := &snapshot{bindings: bindings, types: s.types}
	n.index(added)
	return n
}

// build indexes sorted, distinct bindings.
func build(bs []Binding) *snapshot {
	s := &snapshot{bindings: listOf(bs)}
	s.index(bs)
	return s
}

// index adds bs to s's name indexes, which it copies as it writes them.
func (s *snapshot) index(bs []Binding) {
	var writers [numResourceTypes][2]*indexWriter
	for _, b := range bs {
		if b.ResourceType < 0 || int(b.ResourceType) >= numResourceTypes {
			continue
		}
		p, err := security.ParsePrincipal(b.Principal)
		if err != nil {
			continue // Validate refuses it; never stored
		}
		ti := &s.types[b.ResourceType]
		kind, x := 0, &ti.literal
		if b.PatternType == PatternPrefixed {
			kind, x = 1, &ti.prefixed
			if !slices.Contains(ti.prefixLens, len(b.ResourceName)) {
				// A new slice: the old snapshot's is shared.
				ti.prefixLens = append(slices.Clip(ti.prefixLens), len(b.ResourceName))
				sort.Ints(ti.prefixLens)
			}
		}
		w := writers[b.ResourceType][kind]
		if w == nil {
			w = &indexWriter{x: x}
			writers[b.ResourceType][kind] = w
		}
		w.add(b.ResourceName, entry{principal: p, host: b.Host, op: b.Operation, perm: b.Permission})
	}
}
