// AlterUserScramCredentials (API key 51): version 0 (wire.APIs).
//
// The checks of Kafka's ScramControlManager; the credentials are kept in the
// system store (scramStore, sasl.go; docs/design/security.md §8).

package bridge

import (
	"fmt"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/security/scram"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyAlterUserScramCredentials, (*Gateway).alterUserScramCredentials) }

// alterUserScramCredentials answers AlterUserScramCredentials (key 51) with
// the checks of Kafka's ScramControlManager: a known mechanism
// (UNSUPPORTED_SASL_MECHANISM), a non-empty user name, 4096 to 16384
// iterations, a salted password of the hash's size
// (UNACCEPTABLE_CREDENTIAL), a user named once per request, over deletions
// and upsertions together (DUPLICATE_RESOURCE: Kafka 4.4 refuses even two
// mechanisms of one user in one request) and a deleted credential that exists
// (RESOURCE_NOT_FOUND). A user's changes apply only when all of them pass.
func (g *Gateway) alterUserScramCredentials(c *call) bool {
	var req wire.AlterUserScramCredentialsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	if c.inline {
		return g.offload(c)
	}
	a := g.checkScramAlteration(&req)
	resp := &wire.AlterUserScramCredentialsResponse{}
	// KafkaApis: ALTER on the cluster, else every user's result is
	// CLUSTER_AUTHORIZATION_FAILED and nothing changes.
	denied := g.clusterCode(c, acl.OpAlter)
	changes := 0
	for user, chs := range a.changes {
		if _, failed := a.errs[user]; !failed {
			changes += len(chs)
		}
	}
	// Kafka 4.4's controller writes a record per credential stored or
	// deleted, at most MAX_RECORDS_PER_USER_OP a request; past it the
	// request changes nothing. Kafka answers every user
	// UNKNOWN_SERVER_ERROR without a message there (the bound's exception
	// is not mapped); kiggy says what it is, as CreateAcls does.
	tooMany := changes > maxRecordsPerRequest
	g.adminRefused.scramMu.Lock() // adminlimits.go
	defer g.adminRefused.scramMu.Unlock()
	for _, user := range a.order {
		if denied != wire.NoError {
			resp.Results = append(resp.Results, wire.AlterUserScramCredentialsResult{User: user, ErrorCode: denied})
			continue
		}
		if tooMany {
			resp.Results = append(resp.Results, wire.AlterUserScramCredentialsResult{User: user, ErrorCode: wire.PolicyViolation,
				ErrorMessage: wire.NullStringOf("Unable to perform excessively large batch operation.")})
			continue
		}
		r, failed := a.errs[user]
		if !failed {
			r = wire.AlterUserScramCredentialsResult{User: user}
			for _, ch := range a.changes[user] {
				if ch.cred != nil {
					if ok, err := g.scramRoom(g.ctx, ch.m, user); err != nil || !ok {
						// adminlimits.go
						r.ErrorCode, r.ErrorMessage = wire.PolicyViolation, wire.NullStringOf(fmt.Sprintf(
							"the gateway holds its maximum of %d SCRAM credentials (--max-scram-credentials)", g.cfg.MaxScramCredentials))
						if err != nil {
							r.ErrorCode, r.ErrorMessage = wire.UnknownServerError, wire.NullStringOf(err.Error())
						}
						break
					}
				}
				if err := g.sasl.scram.put(g.ctx, ch.m, user, ch.cred); err != nil {
					r.ErrorCode, r.ErrorMessage = wire.UnknownServerError, wire.NullStringOf(err.Error())
					break
				}
			}
		}
		resp.Results = append(resp.Results, r)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// scramAlteration is an AlterUserScramCredentials request checked: its
// users in request order, the first error of each, and the changes of the
// users without one.
type scramAlteration struct {
	order   []string
	errs    map[string]wire.AlterUserScramCredentialsResult
	changes map[string][]scramChange
	pairs   map[string]int // how many deletions and upsertions name each user
}

// scramChange is one credential to store (cred) or delete (cred nil).
type scramChange struct {
	m    scram.Mechanism
	cred *scram.Credential
}

// checkScramAlteration applies the checks of Kafka's ScramControlManager to
// every deletion, then every upsertion, of req (see
// alterUserScramCredentials); it changes nothing.
func (g *Gateway) checkScramAlteration(req *wire.AlterUserScramCredentialsRequest) *scramAlteration {
	a := &scramAlteration{
		errs:    map[string]wire.AlterUserScramCredentialsResult{},
		changes: map[string][]scramChange{},
		pairs:   map[string]int{},
	}
	for _, d := range req.Deletions {
		a.pairs[d.Name]++
	}
	for _, u := range req.Upsertions {
		a.pairs[u.Name]++
	}
	for _, d := range req.Deletions {
		if !a.check(d.Name, d.Mechanism) {
			continue
		}
		m := scram.Mechanism(d.Mechanism)
		if _, ok, err := g.sasl.scram.ScramCredential(g.ctx, m, d.Name); err != nil {
			a.fail(d.Name, wire.UnknownServerError, err.Error())
		} else if !ok {
			a.fail(d.Name, wire.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		} else {
			a.changes[d.Name] = append(a.changes[d.Name], scramChange{m: m})
		}
	}
	for _, u := range req.Upsertions {
		if !a.check(u.Name, u.Mechanism) {
			continue
		}
		m := scram.Mechanism(u.Mechanism)
		switch {
		case u.Iterations < scram.MinIterations:
			a.fail(u.Name, wire.UnacceptableCredential, "Too few iterations")
		case u.Iterations > scram.MaxIterations:
			a.fail(u.Name, wire.UnacceptableCredential, "Too many iterations")
		case len(u.Salt) == 0 || len(u.SaltedPassword) != m.Size():
			a.fail(u.Name, wire.UnacceptableCredential, "Invalid salt or salted password")
		default:
			cred := scram.FromSaltedPassword(m, u.SaltedPassword, u.Salt, int(u.Iterations))
			a.changes[u.Name] = append(a.changes[u.Name], scramChange{m: m, cred: &cred})
		}
	}
	return a
}

// note records user in request order, the first time it is named.
func (a *scramAlteration) note(user string) {
	if _, ok := a.changes[user]; !ok {
		if _, failed := a.errs[user]; !failed {
			a.order = append(a.order, user)
		}
		a.changes[user] = nil
	}
}

// fail records user's error, unless it has one already.
func (a *scramAlteration) fail(user string, code wire.ErrorCode, msg string) {
	if _, ok := a.errs[user]; !ok {
		a.errs[user] = wire.AlterUserScramCredentialsResult{User: user, ErrorCode: code, ErrorMessage: wire.NullStringOf(msg)}
	}
}

// check notes user and reports whether a change of its mechanism m passes
// the checks every change needs (a name, a known mechanism, the user named
// once), failing the user when not.
func (a *scramAlteration) check(user string, m int8) bool {
	a.note(user)
	switch {
	case user == "":
		a.fail(user, wire.UnacceptableCredential, "Username must not be empty")
	case !scram.Mechanism(m).Valid():
		a.fail(user, wire.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	case a.pairs[user] > 1:
		a.fail(user, wire.DuplicateResource, "A user credential cannot be altered twice in the same request")
	default:
		return true
	}
	return false
}
