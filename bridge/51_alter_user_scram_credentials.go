// AlterUserScramCredentials (API key 51): version 0 (wire.APIs).
//
// The checks of Kafka's ScramControlManager; the credentials are kept in the
// system store (scramStore, sasl.go; docs/design/security.md §8).

package bridge

import (
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
	type change struct {
		m    scram.Mechanism
		cred *scram.Credential
	}
	var order []string
	errs := map[string]wire.AlterUserScramCredentialsResult{}
	changes := map[string][]change{}
	pairs := map[string]int{}
	note := func(user string) {
		if _, ok := changes[user]; !ok {
			if _, failed := errs[user]; !failed {
				order = append(order, user)
			}
			changes[user] = nil
		}
	}
	fail := func(user string, code wire.ErrorCode, msg string) {
		if _, ok := errs[user]; !ok {
			errs[user] = wire.AlterUserScramCredentialsResult{User: user, ErrorCode: code, ErrorMessage: wire.NullStringOf(msg)}
		}
	}
	for _, d := range req.Deletions {
		pairs[d.Name]++
	}
	for _, u := range req.Upsertions {
		pairs[u.Name]++
	}
	check := func(user string, m int8) bool {
		note(user)
		switch {
		case user == "":
			fail(user, wire.UnacceptableCredential, "Username must not be empty")
		case !scram.Mechanism(m).Valid():
			fail(user, wire.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case pairs[user] > 1:
			fail(user, wire.DuplicateResource, "A user credential cannot be altered twice in the same request")
		default:
			return true
		}
		return false
	}
	for _, d := range req.Deletions {
		if !check(d.Name, d.Mechanism) {
			continue
		}
		m := scram.Mechanism(d.Mechanism)
		if _, ok, err := g.sasl.scram.ScramCredential(g.ctx, m, d.Name); err != nil {
			fail(d.Name, wire.UnknownServerError, err.Error())
		} else if !ok {
			fail(d.Name, wire.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		} else {
			changes[d.Name] = append(changes[d.Name], change{m: m})
		}
	}
	for _, u := range req.Upsertions {
		if !check(u.Name, u.Mechanism) {
			continue
		}
		m := scram.Mechanism(u.Mechanism)
		switch {
		case u.Iterations < scram.MinIterations:
			fail(u.Name, wire.UnacceptableCredential, "Too few iterations")
		case u.Iterations > scram.MaxIterations:
			fail(u.Name, wire.UnacceptableCredential, "Too many iterations")
		case len(u.Salt) == 0 || len(u.SaltedPassword) != m.Size():
			fail(u.Name, wire.UnacceptableCredential, "Invalid salt or salted password")
		default:
			cred := scram.FromSaltedPassword(m, u.SaltedPassword, u.Salt, int(u.Iterations))
			changes[u.Name] = append(changes[u.Name], change{m: m, cred: &cred})
		}
	}
	resp := &wire.AlterUserScramCredentialsResponse{}
	// KafkaApis: ALTER on the cluster, else every user's result is
	// CLUSTER_AUTHORIZATION_FAILED and nothing changes.
	denied := g.clusterCode(c, acl.OpAlter)
	for _, user := range order {
		if denied != wire.NoError {
			resp.Results = append(resp.Results, wire.AlterUserScramCredentialsResult{User: user, ErrorCode: denied})
			continue
		}
		r, failed := errs[user]
		if !failed {
			r = wire.AlterUserScramCredentialsResult{User: user}
			for _, ch := range changes[user] {
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
