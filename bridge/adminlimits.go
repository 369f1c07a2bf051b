package bridge

// Caps on what an authorized admin can make the gateway hold (docs/LIMITS.md,
// "State clients can create"): ACLs (CreateAcls), SCRAM credentials
// (AlterUserScramCredentials) and client quota entities
// (AlterClientQuotas). They live in the system store and in memory
// (the authorizer's index, the credential cache), and Kafka caps neither.
// A creation past a cap is refused with POLICY_VIOLATION (44), which the
// admin client reports as a PolicyViolationException; changes to what is
// held (a credential's new password, an ACL that exists) are not refused.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kiggy-io/kiggy/quota"
	"github.com/kiggy-io/kiggy/security/scram"
	"github.com/kiggy-io/kiggy/wire"
)

// DefaultMaxACLs, DefaultMaxScramCredentials and
// DefaultMaxClientQuotaEntities are Config.MaxACLs,
// Config.MaxScramCredentials and Config.MaxClientQuotaEntities when 0.
const (
	DefaultMaxACLs                = 100_000
	DefaultMaxScramCredentials    = 100_000
	DefaultMaxClientQuotaEntities = 100_000
)

// adminRefusals counts the creations the caps refused.
type adminRefusals struct {
	acls, scram, quotas atomic.Uint64
	// scramMu serializes AlterUserScramCredentials' changes, so that the
	// cap's check and the store of what it admitted are one step.
	scramMu sync.Mutex
	// quotaMu does the same for AlterClientQuotas, and keeps the
	// janitor's reload of the quotas (reloadQuotas) from landing between
	// an alteration's store and its apply.
	quotaMu sync.Mutex
}

// quotaEntityRoom reports whether e's alteration may be stored: one that
// sets a value of an entity with none stored yet needs room under
// --max-client-quota-entities; changes to a stored entity and removals
// always may. The caller holds g.adminRefused.quotaMu until it has stored
// it.
func (g *Gateway) quotaEntityRoom(e *wire.QuotaAlteration, ent quota.Entity) (wire.ErrorCode, string) {
	max := g.cfg.MaxClientQuotaEntities
	if max <= 0 || g.quotaBook.IsStored(ent) || !slices.ContainsFunc(e.Ops, func(op wire.QuotaOp) bool { return !op.Remove }) ||
		g.quotaBook.StoredEntities() < max {
		return wire.NoError, ""
	}
	g.adminRefused.quotas.Add(1)
	return wire.PolicyViolation, fmt.Sprintf("the gateway holds its maximum of %d client quota entities (--max-client-quota-entities)", max)
}

// aclRoom reports whether one more ACL may be stored beside pending ones
// stored but not yet indexed (the caller holds g.acl.mu); false answers the
// creation's result.
func (g *Gateway) aclRoom(r *wire.ACLResult, pending int) bool {
	if g.cfg.MaxACLs <= 0 || g.acl.authz.Len()+pending < g.cfg.MaxACLs {
		return true
	}
	g.adminRefused.acls.Add(1)
	*r = wire.ACLResult{ErrorCode: wire.PolicyViolation, ErrorMessage: wire.NullStringOf(fmt.Sprintf(
		"the gateway holds its maximum of %d ACLs (--max-acls)", g.cfg.MaxACLs))}
	return false
}

// scramRoom reports whether user's credential for m may be stored: one that
// exists may always be replaced; a new one only under the cap. The caller
// holds g.adminRefused.scramMu until it has stored it.
func (g *Gateway) scramRoom(ctx context.Context, m scram.Mechanism, user string) (bool, error) {
	if g.cfg.MaxScramCredentials <= 0 {
		return true, nil
	}
	s := g.sasl.scram
	s.mu.Lock()
	defer s.mu.Unlock()
	load := s.load
	if g.sharesSystem() {
		load = s.read // counting what other gateways stored too
	}
	creds, err := load(ctx)
	if err != nil {
		return false, err
	}
	if _, ok := creds[scramKey(m, user)]; ok || len(creds) < g.cfg.MaxScramCredentials {
		return true, nil
	}
	g.adminRefused.scram.Add(1)
	return false, nil
}
