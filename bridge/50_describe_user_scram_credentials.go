// DescribeUserScramCredentials (API key 50): version 0 (wire.APIs).
//
// As Kafka's controller, over the credentials in the system store
// (scramStore, sasl.go; docs/design/security.md §8).

package bridge

import (
	"slices"

	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeUserScramCredentials, (*Gateway).describeUserScramCredentials) }

// describeUserScramCredentials answers DescribeUserScramCredentials (key
// 50) as Kafka's controller does: every user with credentials for a null or
// empty list, else one result per name, RESOURCE_NOT_FOUND for a user with
// none and DUPLICATE_RESOURCE for a name asked twice.
func (g *Gateway) describeUserScramCredentials(c *call) bool {
	var req wire.DescribeUserScramCredentialsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	if c.inline {
		return g.offload(c)
	}
	resp := &wire.DescribeUserScramCredentialsResponse{}
	if code := g.clusterCode(c, acl.OpDescribe); code != wire.NoError {
		// KafkaApis: DESCRIBE on the cluster, else the request fails.
		resp.ErrorCode = code
		resp.CountErrors(g.errorCounter(c))
		respond(c, resp)
		return false
	}
	users, err := g.sasl.scram.users(g.ctx)
	switch {
	case err != nil:
		resp.ErrorCode, resp.ErrorMessage = wire.UnknownServerError, wire.NullStringOf(err.Error())
	case len(req.Users) == 0:
		names := make([]string, 0, len(users))
		for u := range users {
			names = append(names, u)
		}
		slices.Sort(names)
		for _, u := range names {
			resp.Results = append(resp.Results, wire.DescribeUserScramCredentialsResult{User: u, Credentials: users[u]})
		}
	default:
		seen := map[string]int{}
		for _, u := range req.Users {
			seen[u]++
		}
		done := map[string]bool{}
		for _, u := range req.Users {
			if done[u] {
				continue
			}
			done[u] = true
			r := wire.DescribeUserScramCredentialsResult{User: u}
			switch infos, ok := users[u]; {
			case seen[u] > 1:
				r.ErrorCode = wire.DuplicateResource
				r.ErrorMessage = wire.NullStringOf("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
			case !ok:
				r.ErrorCode = wire.ResourceNotFound
				r.ErrorMessage = wire.NullStringOf("Attempt to describe a user credential that does not exist: " + u)
			default:
				r.Credentials = infos
			}
			resp.Results = append(resp.Results, r)
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}
