// DescribeClientQuotas (API key 48): versions 0–1 (wire.APIs).
//
// The client quotas are the quota book's (clientquotas.go;
// docs/design/quotas.md §8): the flags' values of the default entities
// under those AlterClientQuotas stored.

package bridge

import (
	"maps"
	"slices"
	"strconv"

	"github.com/kiggy-io/kiggy/quota"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeClientQuotas, (*Gateway).describeClientQuotas) }

// describeClientQuotas answers DescribeClientQuotas (key 48) with the
// entities of the quota book that match the filter, as Kafka's
// ClientQuotasImage.describe: DESCRIBE_CONFIGS on the cluster (KafkaApis),
// then the filter's checks, each a request error with Kafka's message.
// kafka-configs --describe --entity-type users asks it beside the SCRAM
// credentials.
func (g *Gateway) describeClientQuotas(c *call) bool {
	var req wire.DescribeClientQuotasRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := &wire.DescribeClientQuotasResponse{}
	if code := g.clusterCode(c, acl.OpDescribeConfigs); code != wire.NoError {
		resp.ErrorCode = code
	} else if f, code, msg := quotaFilterOf(&req); code != wire.NoError {
		resp.ErrorCode, resp.ErrorMessage = code, wire.NullStringOf(msg)
	} else {
		resp.Entries = []wire.QuotaEntry{}
		g.adminRefused.quotaMu.Lock()
		g.syncQuotasForAdmin()
		g.adminRefused.quotaMu.Unlock()
		for _, ev := range g.quotaBook.Entries() {
			if f.matches(ev.Entity) {
				resp.Entries = append(resp.Entries, quotaEntryOf(ev.Entity, ev.Values))
			}
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// quotaFilter is a DescribeClientQuotas filter: the parts an entity must
// have (exact: that name, or the default when nil), the types it must
// have (any name), and strict: no other parts.
type quotaFilter struct {
	exact  map[string]*string
	typed  map[string]bool
	strict bool
}

// quotaFilterOf checks req's components as ClientQuotasImage.describe
// does, in its order.
func quotaFilterOf(req *wire.DescribeClientQuotasRequest) (quotaFilter, wire.ErrorCode, string) {
	f := quotaFilter{exact: map[string]*string{}, typed: map[string]bool{}, strict: req.Strict}
	for _, comp := range req.Components {
		t := comp.EntityType
		_, dup := f.exact[t]
		switch {
		case t == "":
			return f, wire.InvalidRequest, "Invalid empty entity type."
		case dup || f.typed[t]:
			return f, wire.InvalidRequest, "Entity type " + t + " cannot appear more than once in the filter."
		case t != quota.TypeIP && t != quota.TypeUser && t != quota.TypeClientID:
			return f, wire.UnsupportedVersion, "Unsupported entity type " + t
		}
		switch comp.MatchType {
		case 0: // MATCH_TYPE_EXACT
			if !comp.Match.Valid {
				return f, wire.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
			name := comp.Match.S
			f.exact[t] = &name
		case 1: // MATCH_TYPE_DEFAULT
			if comp.Match.Valid {
				return f, wire.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
			f.exact[t] = nil
		case 2: // MATCH_TYPE_SPECIFIED
			if comp.Match.Valid {
				return f, wire.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
			f.typed[t] = true
		default:
			return f, wire.InvalidRequest, "Unknown match type " + strconv.Itoa(int(comp.MatchType))
		}
	}
	if f.has(quota.TypeIP) && (f.has(quota.TypeUser) || f.has(quota.TypeClientID)) {
		return f, wire.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
	}
	return f, wire.NoError, ""
}

func (f *quotaFilter) has(t string) bool {
	_, ok := f.exact[t]
	return ok || f.typed[t]
}

// matches is ClientQuotasImage.matches.
func (f *quotaFilter) matches(e quota.Entity) bool {
	parts := maps.Collect(e.Parts())
	if f.strict && len(parts) != len(f.exact)+len(f.typed) {
		return false
	}
	for t, name := range f.exact {
		p, ok := parts[t]
		if !ok || (name == nil) != (p.Kind == quota.Default) || name != nil && *name != p.Name {
			return false
		}
	}
	for t := range f.typed {
		if _, ok := parts[t]; !ok {
			return false
		}
	}
	return true
}

// quotaEntryOf is e and its values as DescribeClientQuotas lists them.
func quotaEntryOf(e quota.Entity, vs quota.Values) wire.QuotaEntry {
	var out wire.QuotaEntry
	for t, p := range e.Parts() {
		name := wire.NullString{}
		if p.Kind == quota.Named {
			name = wire.NullStringOf(p.Name)
		}
		out.Entity = append(out.Entity, wire.QuotaEntity{Type: t, Name: name})
	}
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		out.Values = append(out.Values, wire.QuotaValue{Key: k, Value: vs[k]})
	}
	return out
}
