// AlterClientQuotas (API key 49): versions 0–1 (wire.APIs).
//
// The checks of Kafka's ClientQuotaControlManager; the quotas are kept in
// the system store (clientquotas.go; docs/design/quotas.md §8).

package bridge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/quota"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyAlterClientQuotas, (*Gateway).alterClientQuotas) }

// alterClientQuotas answers AlterClientQuotas (key 49): ALTER_CONFIGS on
// the cluster (ControllerApis.handleAlterClientQuotas), else every entity
// is CLUSTER_AUTHORIZATION_FAILED; then each entity is checked as
// ClientQuotaControlManager.alterClientQuotaEntity checks it, and the
// alterations of the entities that pass are stored, unless validate_only.
// Removing a value that is not stored does nothing. A value the flags set
// (the default entities') is overridden by a stored one and back in force
// when that is removed.
func (g *Gateway) alterClientQuotas(c *call) bool {
	var req wire.AlterClientQuotasRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	if c.inline {
		return g.offload(c)
	}
	resp := &wire.AlterClientQuotasResponse{Entries: make([]wire.QuotaAlterationResult, len(req.Entries))}
	denied := g.clusterCode(c, acl.OpAlterConfigs)
	entities := make([]quota.Entity, len(req.Entries))
	count := map[string]int{}
	for i := range req.Entries {
		entities[i] = quotaEntityOf(req.Entries[i].Entity)
		count[entityMapKey(req.Entries[i].Entity)]++
	}
	// Checked first (a host name's lookup may take a second), stored
	// under the lock that makes the cap's check and the store one step.
	for i := range req.Entries {
		e, r := &req.Entries[i], &resp.Entries[i]
		r.Entity = e.Entity
		if denied != wire.NoError {
			r.ErrorCode, r.ErrorMessage = denied, wire.NullStringOf("Cluster authorization failed.")
			continue
		}
		if code, msg := checkQuotaAlteration(g.ctx, e, entities[i], count[entityMapKey(e.Entity)] > 1); code != wire.NoError {
			r.ErrorCode, r.ErrorMessage = code, wire.NullStringOf(msg)
		}
	}
	ops := 0
	for i := range req.Entries {
		if resp.Entries[i].ErrorCode == wire.NoError {
			ops += len(req.Entries[i].Ops)
		}
	}
	if ops > maxRecordsPerRequest {
		// Kafka 4.4's controller writes a record per operation, at most
		// MAX_RECORDS_PER_USER_OP a request; past it every entry fails
		// with the PolicyViolationException's default message and
		// nothing changes.
		for i := range resp.Entries {
			resp.Entries[i].ErrorCode = wire.PolicyViolation
			resp.Entries[i].ErrorMessage = wire.NullStringOf("Request parameters do not satisfy the configured policy.")
		}
	}
	g.adminRefused.quotaMu.Lock() // adminlimits.go
	defer g.adminRefused.quotaMu.Unlock()
	// From the newest stored state: an entity another gateway changed a
	// moment ago is changed from what it set (sharedstate.go).
	g.syncQuotasForAdmin()
	for i := range req.Entries {
		e, r := &req.Entries[i], &resp.Entries[i]
		if r.ErrorCode != wire.NoError {
			continue
		}
		code, msg := g.quotaEntityRoom(e, entities[i])
		if code == wire.NoError && !req.ValidateOnly {
			code, msg = g.storeQuotas(e, entities[i])
		}
		if code != wire.NoError {
			r.ErrorCode, r.ErrorMessage = code, wire.NullStringOf(msg)
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// storeQuotas applies e's operations on ent's stored quotas, stores what
// changed in one change of the system store, then sets the result in the
// book: all of an entity's operations or, when the store fails, none.
func (g *Gateway) storeQuotas(e *wire.QuotaAlteration, ent quota.Entity) (wire.ErrorCode, string) {
	before := g.quotaBook.Stored(ent)
	vs := maps.Clone(before)
	if vs == nil {
		vs = quota.Values{}
	}
	for _, op := range e.Ops {
		if op.Remove {
			delete(vs, op.Key)
		} else {
			vs[op.Key] = op.Value
		}
	}
	if maps.Equal(before, vs) {
		return wire.NoError, "" // removing what is not stored changes nothing
	}
	if err := g.storeEntityQuotas(g.ctx, ent, before, vs); err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			return wire.PolicyViolation, "the entity's names are too long to store: " + err.Error()
		}
		return wire.UnknownServerError, err.Error()
	}
	g.quotaBook.SetEntity(ent, vs)
	if ent.IP.Kind == quota.Named {
		g.resolveQuotaHosts(g.ctx)
	}
	return wire.NoError, ""
}

// quotaEntityOf is the entity parts of a request as Kafka's
// AlterClientQuotasRequest.entries() maps them: one part a type, the last
// of a type named twice; a null name the default. Types other than user,
// client-id and ip are left out here and refused by checkQuotaAlteration.
func quotaEntityOf(parts []wire.QuotaEntity) quota.Entity {
	var e quota.Entity
	for _, p := range parts {
		part := quota.Part{Kind: quota.Default}
		if p.Name.Valid {
			part = quota.Part{Kind: quota.Named, Name: p.Name.S}
		}
		switch p.Type {
		case quota.TypeUser:
			e.User = part
		case quota.TypeClientID:
			e.ClientID = part
		case quota.TypeIP:
			e.IP = part
		}
	}
	return e
}

// entityMapKey is the entity parts as Kafka compares two entities of a
// request (a map of type to name, the last of a type named twice; unknown
// types included), as one string.
func entityMapKey(parts []wire.QuotaEntity) string {
	m := map[string]wire.NullString{}
	for _, p := range parts {
		m[p.Type] = p.Name
	}
	var b strings.Builder
	for _, t := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%q=%v:%q;", t, m[t].Valid, m[t].S)
	}
	return b.String()
}

// quotaKeyTypes are the quota keys of user and client-id entities and of IP
// entities, each with whether its value must be whole and its bound
// (Kafka's QuotaConfig: producer_byte_rate and consumer_byte_rate are LONG,
// connection_creation_rate INT, the others DOUBLE).
var (
	clientQuotaKeys = map[string]quotaKeyType{
		quota.KeyProducerByteRate:       {whole: true, max: math.MaxInt64, typeName: "a LONG"},
		quota.KeyConsumerByteRate:       {whole: true, max: math.MaxInt64, typeName: "a LONG"},
		quota.KeyRequestPercentage:      {},
		quota.KeyControllerMutationRate: {},
	}
	ipQuotaKeys = map[string]quotaKeyType{
		quota.KeyConnectionCreationRate: {whole: true, max: math.MaxInt32, typeName: "an INT"},
	}
)

type quotaKeyType struct {
	whole    bool
	max      float64
	typeName string
}

// checkQuotaAlteration checks one entity's alteration as Kafka's
// ClientQuotaControlManager does (messages as Kafka's):
//
//   - an entity named twice in the request, or a key named twice for one
//     entity: INVALID_REQUEST "Ignoring duplicate entity ..."
//     (alterClientQuotas);
//   - validateEntity: no parts ("Invalid empty client quota entity"), a
//     type other than user, client-id and ip ("Unhandled client quota
//     entity type: T"), an empty name ("Empty T not supported");
//   - configKeysForEntityType: ip with user or client-id, an ip that is
//     neither an address nor a host name that resolves;
//   - validateQuotaKeyValue, for each value set (a removal is not
//     checked): a key of the entity's kind, greater than 0, within its
//     type's bound and whole for LONG and INT keys.
func checkQuotaAlteration(ctx context.Context, e *wire.QuotaAlteration, ent quota.Entity, duplicate bool) (wire.ErrorCode, string) {
	keys := map[string]bool{}
	for _, op := range e.Ops {
		if keys[op.Key] {
			duplicate = true
		}
		keys[op.Key] = true
	}
	if duplicate {
		return wire.InvalidRequest, "Ignoring duplicate entity " + ent.String()
	}
	if len(e.Entity) == 0 {
		return wire.InvalidRequest, "Invalid empty client quota entity"
	}
	for _, p := range e.Entity {
		switch p.Type {
		case quota.TypeUser, quota.TypeClientID, quota.TypeIP:
		default:
			return wire.InvalidRequest, "Unhandled client quota entity type: " + p.Type
		}
		if p.Name.Valid && p.Name.S == "" {
			return wire.InvalidRequest, "Empty " + p.Type + " not supported"
		}
	}
	valid := clientQuotaKeys
	if ent.IP.Kind != quota.Absent {
		if ent.User.Kind != quota.Absent || ent.ClientID.Kind != quota.Absent {
			// Kafka's message, its missing space included.
			return wire.InvalidRequest, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
		}
		if ent.IP.Kind == quota.Named && !resolvableIP(ctx, ent.IP.Name) {
			return wire.InvalidRequest, ent.IP.Name + " is not a valid IP or resolvable host."
		}
		valid = ipQuotaKeys
	}
	for _, op := range e.Ops {
		if op.Remove {
			continue
		}
		kt, ok := valid[op.Key]
		switch {
		case !ok:
			return wire.InvalidRequest, "Invalid configuration key " + op.Key
		case !(op.Value > 0):
			return wire.InvalidRequest, "Quota " + op.Key + " must be greater than 0"
		case kt.whole && op.Value > kt.max:
			return wire.InvalidRequest, fmt.Sprintf("Proposed value for %s is too large for %s.", op.Key, kt.typeName)
		case kt.whole && math.Abs(math.Mod(op.Value, 1)) > 1e-6:
			return wire.InvalidRequest, op.Key + " cannot be a fractional value."
		case math.IsInf(op.Value, 0):
			return wire.InvalidRequest, "Quota " + op.Key + " must be finite"
		}
	}
	return wire.NoError, ""
}

// resolvableIP reports whether name is an IP address or a host name that
// resolves (Kafka's InetAddress.getByName), within a second.
func resolvableIP(ctx context.Context, name string) bool {
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	return err == nil && len(addrs) > 0
}
