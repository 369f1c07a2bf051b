//go:build linux

package hostile

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminStateFlood (issue #35): an authorized admin floods the gateway
// with ACLs (CreateAcls, 20,000 against --max-acls 5000) and SCRAM
// credentials (AlterUserScramCredentials, 20,000 users against
// --max-scram-credentials 2000), beside the steady producer and consumer
// group: each is stored up to its cap and refused with POLICY_VIOLATION
// beyond it, counted by kiggy_admin_refused_total; RSS stays under 64 MiB
// of growth and the steady clients lose nothing.
func TestAdminStateFlood(t *testing.T) {
	const perReq = 10
	t.Run("ACLs", func(t *testing.T) {
		const (
			limit = 5000
			n     = 20_000
		)
		// Without SASL every connection is User:ANONYMOUS: a super user
		// here, so the steady clients and the flood are authorized.
		k := startFloodKiggy(t, append(floodQuota(t), "--acl-enabled", "--super-users", "User:ANONYMOUS", "--max-acls", strconv.Itoa(limit))...)
		s := startSteady(t, k)
		before := k.rss(t)
		peak := k.peak(t)
		codes := map[int16]int{}
		s.flood(func() {
			pipelined(t, k.Addr, "", n/perReq, 2, 20, func(i int) kmsg.Request {
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
			}, func(r kmsg.Response) {
				for _, res := range r.(*kmsg.CreateACLsResponse).Results {
					codes[res.ErrorCode]++
				}
			})
		})
		high := peak()
		m := k.metrics(t)
		t.Logf("%d ACLs: %v; RSS %.1f MiB before, peak %.1f MiB; flood took %v", n, codes, mib(before), mib(high), s.to.Sub(s.from).Round(time.Millisecond))
		if codes[0] != limit || codes[44] != n-limit {
			t.Errorf("answers %v, want %d stored (0) and the rest POLICY_VIOLATION (44)", codes, limit)
		}
		if got := m[`kiggy_admin_refused_total{reason="max_acls"}`]; got != float64(codes[44]) {
			t.Errorf("kiggy_admin_refused_total{reason=\"max_acls\"} = %v, want %d", got, codes[44])
		}
		if grew := high - before; grew >= groupStateBound {
			t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), groupStateBound>>20)
		}
		checkThrottled(t, k, false)
		s.check(t)
	})
	t.Run("SCRAM", func(t *testing.T) {
		const (
			limit = 2000
			n     = 20_000
		)
		k := startFloodKiggy(t, append(floodQuota(t), "--max-scram-credentials", strconv.Itoa(limit))...)
		s := startSteady(t, k)
		before := k.rss(t)
		peak := k.peak(t)
		codes := map[int16]int{}
		s.flood(func() {
			pipelined(t, k.Addr, "", n/perReq, 2, 20, func(i int) kmsg.Request {
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
			}, func(r kmsg.Response) {
				for _, res := range r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
					codes[res.ErrorCode]++
				}
			})
		})
		high := peak()
		m := k.metrics(t)
		t.Logf("%d SCRAM credentials: %v; RSS %.1f MiB before, peak %.1f MiB; flood took %v", n, codes, mib(before), mib(high), s.to.Sub(s.from).Round(time.Millisecond))
		if codes[0] != limit || codes[44] != n-limit {
			t.Errorf("answers %v, want %d stored (0) and the rest POLICY_VIOLATION (44)", codes, limit)
		}
		if got := m[`kiggy_admin_refused_total{reason="max_scram_credentials"}`]; got != float64(codes[44]) {
			t.Errorf("kiggy_admin_refused_total{reason=\"max_scram_credentials\"} = %v, want %d", got, codes[44])
		}
		if grew := high - before; grew >= groupStateBound {
			t.Errorf("RSS grew by %.1f MiB over the flood, want < %d", mib(grew), groupStateBound>>20)
		}
		checkThrottled(t, k, false)
		s.check(t)
	})
}
