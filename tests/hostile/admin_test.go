//go:build linux

package hostile

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminStateFlood: an authorized admin floods the gateway
// with ACLs (CreateAcls, 20,000 against --max-acls 5000), SCRAM
// credentials (AlterUserScramCredentials, 20,000 users against
// --max-scram-credentials 2000) and client quota entities
// (AlterClientQuotas, 20,000 client ids against
// --max-client-quota-entities 2000), beside the steady producer and
// consumer group: each is stored up to its cap and refused with
// POLICY_VIOLATION beyond it, counted by kiggy_admin_refused_total; RSS
// stays under 64 MiB of growth and the steady clients lose nothing.
func TestAdminStateFlood(t *testing.T) {
	const perReq = 10
	for _, f := range []struct {
		name  string
		flags []string // besides the cap's
		cap   string   // the cap's flag
		limit int
		// request builds the i-th request of perReq creations; codes
		// returns a response's error codes.
		request func(i int) kmsg.Request
		codes   func(kmsg.Response) []int16
		reason  string // kiggy_admin_refused_total's
	}{
		{
			// Without SASL every connection is User:ANONYMOUS: a super
			// user here, so the steady clients and the flood are
			// authorized.
			name: "ACLs", flags: []string{"--acl-enabled", "--super-users", "User:ANONYMOUS"}, cap: "--max-acls", limit: 5000,
			request: func(i int) kmsg.Request {
				req := kmsg.NewPtrCreateACLsRequest()
				req.Version = 3
				for j := range perReq {
					c := kmsg.NewCreateACLsRequestCreation()
					c.ResourceType = kmsg.ACLResourceTypeTopic
					c.ResourceName = "acl-flood-" + strconv.Itoa(i*perReq+j)
					c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
					c.Principal = "User:flood"
					c.Host = "*"
					c.Operation = kmsg.ACLOperationRead
					c.PermissionType = kmsg.ACLPermissionTypeAllow
					req.Creations = append(req.Creations, c)
				}
				return req
			},
			codes: func(r kmsg.Response) (out []int16) {
				for _, res := range r.(*kmsg.CreateACLsResponse).Results {
					out = append(out, res.ErrorCode)
				}
				return out
			},
			reason: "max_acls",
		},
		{
			name: "SCRAM", cap: "--max-scram-credentials", limit: 2000,
			request: func(i int) kmsg.Request {
				req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				for j := range perReq {
					u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
					u.Name = "flood-user-" + strconv.Itoa(i*perReq+j)
					u.Mechanism = 1 // SCRAM-SHA-256
					u.Iterations = 4096
					u.Salt = []byte("salt")
					u.SaltedPassword = make([]byte, 32)
					req.Upsertions = append(req.Upsertions, u)
				}
				return req
			},
			codes: func(r kmsg.Response) (out []int16) {
				for _, res := range r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
					out = append(out, res.ErrorCode)
				}
				return out
			},
			reason: "max_scram_credentials",
		},
		{
			name: "quotas", cap: "--max-client-quota-entities", limit: 2000,
			request: func(i int) kmsg.Request {
				req := kmsg.NewPtrAlterClientQuotasRequest()
				req.Version = 1
				for j := range perReq {
					e := kmsg.NewAlterClientQuotasRequestEntry()
					en := kmsg.NewAlterClientQuotasRequestEntryEntity()
					name := "flood-client-" + strconv.Itoa(i*perReq+j)
					en.Type, en.Name = "client-id", &name
					op := kmsg.NewAlterClientQuotasRequestEntryOp()
					op.Key, op.Value = "request_percentage", 50
					e.Entity, e.Ops = append(e.Entity, en), append(e.Ops, op)
					req.Entries = append(req.Entries, e)
				}
				return req
			},
			codes: func(r kmsg.Response) (out []int16) {
				for _, res := range r.(*kmsg.AlterClientQuotasResponse).Entries {
					out = append(out, res.ErrorCode)
				}
				return out
			},
			reason: "max_client_quota_entities",
		},
	} {
		t.Run(f.name, func(t *testing.T) {
			const n = 20_000
			k := startFloodKiggy(t, append(append(floodQuota(t), f.flags...), f.cap, strconv.Itoa(f.limit))...)
			s := startSteady(t, k)
			before := k.rss(t)
			peak := k.peak(t)
			codes := map[int16]int{}
			s.flood(func() {
				pipelined(t, k.Addr, "", n/perReq, 2, 20, f.request, func(r kmsg.Response) {
					for _, c := range f.codes(r) {
						codes[c]++
					}
				})
			})
			high := peak()
			m := k.metrics(t)
			t.Logf("%d %s: %v; RSS %.1f MiB before, peak %.1f MiB; flood took %v", n, f.name, codes, mib(before), mib(high), s.to.Sub(s.from).Round(time.Millisecond))
			if codes[0] != f.limit || codes[44] != n-f.limit {
				t.Errorf("answers %v, want %d stored (0) and the rest POLICY_VIOLATION (44)", codes, f.limit)
			}
			metric := `kiggy_admin_refused_total{reason="` + f.reason + `"}`
			if got := m[metric]; got != float64(codes[44]) {
				t.Errorf("%s = %v, want %d", metric, got, codes[44])
			}
			if grew := high - before; grew >= groupStateBound {
				t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), groupStateBound>>20)
			}
			checkThrottled(t, k, false)
			s.check(t)
		})
	}
}
