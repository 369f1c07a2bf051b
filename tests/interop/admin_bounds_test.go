package interop

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestACLRequestBounds: Kafka 4.4's controller writes at most 10,000
// records for one request. A CreateAcls of more than 10,000 new ACLs fails
// every creation with POLICY_VIOLATION and stores none (ACLs that exist do
// not count); a DeleteAcls whose filters match more than 10,000 ACLs (an
// ACL two filters match counted once, listed in both) fails every filter
// with INVALID_REQUEST and deletes nothing; 10,000 go in one request. The same
// test runs against Kafka 4.4 with the StandardAuthorizer.
func TestACLRequestBounds(t *testing.T) {
	cl, ctx := requestClient(t, aclTargetAddr(t), 3*time.Minute, kgo.RequestTimeoutOverhead(time.Minute))
	create := func(n int) map[string]int {
		t.Helper()
		req := kmsg.NewPtrCreateACLsRequest()
		for i := range n {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, fmt.Sprintf("t-%d", i), kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreateAcls: %v", err)
		}
		out := map[string]int{}
		for _, r := range resp.Results {
			out[fmt.Sprintf("%d %s", r.ErrorCode, deref(r.ErrorMessage))]++
		}
		return out
	}
	filter := func(name *string) kmsg.DeleteACLsRequestFilter {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeAny
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return f
	}
	type result struct {
		code    int16
		msg     string
		matched int
	}
	del := func(fs ...kmsg.DeleteACLsRequestFilter) []result {
		t.Helper()
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Filters = fs
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("DeleteAcls: %v", err)
		}
		var out []result
		for _, r := range resp.Results {
			out = append(out, result{r.ErrorCode, deref(r.ErrorMessage), len(r.MatchingACLs)})
		}
		return out
	}
	held := func() int {
		t.Helper()
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("DescribeAcls: %v %d", err, resp.ErrorCode)
		}
		n := 0
		for _, r := range resp.Resources {
			n += len(r.ACLs)
		}
		return n
	}
	const tooMany = "44 Unable to perform excessively large batch operation."
	if got := create(10_001); got[tooMany] != 10_001 {
		t.Fatalf("10,001 new ACLs: %v, want all %q", got, tooMany)
	}
	if n := held(); n != 0 {
		t.Fatalf("%d ACLs held after a refused CreateAcls, want 0", n)
	}
	if got := create(10_000); got["0 <null>"]+got["0 "] != 10_000 {
		t.Fatalf("10,000 new ACLs: %v, want all created", got)
	}
	if got := create(10_001); got["0 <null>"]+got["0 "] != 10_001 {
		t.Fatalf("10,001 ACLs of which one is new: %v, want all created", got)
	}
	first, second := "t-0", "t-1"
	refused := result{42, "Cannot remove more than 10000 acls in a single delete operation.", 0}
	if got := del(filter(&first), filter(nil), filter(&second)); len(got) != 3 || got[0] != refused || got[1] != refused || got[2] != refused {
		t.Fatalf("DeleteAcls of t-0, every topic ACL, t-1: %+v, want every filter %+v", got, refused)
	}
	if n := held(); n != 10_001 {
		t.Fatalf("%d ACLs held after a refused DeleteAcls, want 10,001", n)
	}
	if got := del(filter(&first)); len(got) != 1 || got[0] != (result{0, "<null>", 1}) {
		t.Fatalf("DeleteAcls of t-0: %+v", got)
	}
	// An ACL two filters match counts once, and is in both results.
	start := time.Now()
	if got := del(filter(&second), filter(nil)); len(got) != 2 || got[0] != (result{0, "<null>", 1}) || got[1] != (result{0, "<null>", 10_000}) {
		t.Fatalf("DeleteAcls of t-1 and every topic ACL: %+v, want 1 and 10,000 matched", got)
	}
	t.Logf("deleting 10,000 ACLs in one request took %v", time.Since(start))
	// Kafka's brokers apply the controller's removals a moment later.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		n := held()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ACLs held 10 s after deleting them all", n)
		}
	}
}

// TestQuotaAndScramRequestBounds: an AlterClientQuotas of more than 10,000
// operations, and an AlterUserScramCredentials of more than 10,000
// credentials, change nothing and fail every entry; 10,000 go in one
// request. Kafka 4.4 answers the quotas POLICY_VIOLATION with the
// exception's default message, as kiggy does, and the credentials
// UNKNOWN_SERVER_ERROR without a message, where kiggy answers
// POLICY_VIOLATION and says why (docs/LIMITS.md). The same test runs
// against Kafka 4.4.
func TestQuotaAndScramRequestBounds(t *testing.T) {
	tg := newTarget(t)
	cl, ctx := requestClient(t, tg.Addr(), 3*time.Minute, kgo.RequestTimeoutOverhead(time.Minute))
	quotas := func(entities, opsEach int) map[string]int {
		t.Helper()
		req := kmsg.NewPtrAlterClientQuotasRequest()
		for i := range entities {
			e := kmsg.NewAlterClientQuotasRequestEntry()
			c := kmsg.NewAlterClientQuotasRequestEntryEntity()
			c.Type, c.Name = "client-id", kmsg.StringPtr(fmt.Sprintf("bound-%d", i))
			e.Entity = append(e.Entity, c)
			for _, key := range []string{"producer_byte_rate", "consumer_byte_rate"}[:opsEach] {
				op := kmsg.NewAlterClientQuotasRequestEntryOp()
				op.Key, op.Value = key, 1_000_000
				e.Ops = append(e.Ops, op)
			}
			req.Entries = append(req.Entries, e)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("AlterClientQuotas: %v", err)
		}
		out := map[string]int{}
		for _, r := range resp.Entries {
			out[fmt.Sprintf("%d %s", r.ErrorCode, deref(r.ErrorMessage))]++
		}
		return out
	}
	const policy = "44 Request parameters do not satisfy the configured policy."
	if got := quotas(5_001, 2); got[policy] != 5_001 {
		t.Errorf("on %s: 5,001 entities × 2 operations: %v, want every entry %q", tg.Name(), got, policy)
	}
	if got := quotas(4_999, 2); got["0 <null>"] != 4_999 {
		t.Errorf("on %s: 4,999 entities × 2 operations: %v, want all applied", tg.Name(), got)
	}
	desc := kmsg.NewPtrDescribeClientQuotasRequest()
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.MatchType = "client-id", 2 // any specified name
	desc.Components = append(desc.Components, comp)
	// Kafka's brokers apply the controller's records a moment later.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		dresp, err := desc.RequestWith(ctx, cl)
		if err != nil || dresp.ErrorCode != 0 {
			t.Fatalf("DescribeClientQuotas: %v %d", err, dresp.ErrorCode)
		}
		n := len(dresp.Entries)
		if n == 4_999 {
			break
		}
		if n > 4_999 || time.Now().After(deadline) {
			t.Errorf("on %s: %d client ids with quotas, want the 4,999 of the request applied (none of the refused one's 5,001)", tg.Name(), n)
			break
		}
	}

	scrams := func(n int) map[string]int {
		t.Helper()
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		for i := range n {
			u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
			u.Name, u.Mechanism, u.Iterations = fmt.Sprintf("bound-%d", i), 1, 4096
			u.Salt, u.SaltedPassword = []byte("0123456789abcdef"), make([]byte, 32)
			req.Upsertions = append(req.Upsertions, u)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("AlterUserScramCredentials: %v", err)
		}
		out := map[string]int{}
		for _, r := range resp.Results {
			out[fmt.Sprintf("%d %s", r.ErrorCode, deref(r.ErrorMessage))]++
		}
		return out
	}
	refused := "44 Unable to perform excessively large batch operation."
	if tg.Name() == "kafka" {
		refused = "-1 <null>"
	}
	if got := scrams(10_001); got[refused] != 10_001 {
		t.Errorf("on %s: 10,001 credentials: %v, want every user %q", tg.Name(), got, refused)
	}
	if got := scrams(10_000); got["0 <null>"] != 10_000 {
		t.Errorf("on %s: 10,000 credentials: %v, want all stored", tg.Name(), got)
	}
}
