package bridge

// Authorization: the ACL authorizer on every request, and what the ACL admin
// APIs share (DescribeAcls 29, CreateAcls 30, DeleteAcls 31: their handlers
// are 29_describe_acls.go, 30_create_acls.go, 31_delete_acls.go). docs/design/security.md §6
// has the model, the per-API table of operations and resources, and the
// error codes; KafkaApis and AclApis in apache/kafka are the reference.
//
// With Config.Authorization.Enabled false (the default) g.acl.authz is nil
// and every check is one nil test: today's behaviour, everything allowed,
// and the ACL APIs answer SECURITY_DISABLED as a Kafka broker without an
// authorizer does.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

// AuthorizationConfig turns on the ACL authorizer (Kafka
// authorizer.class.name = StandardAuthorizer; docs/design/security.md §6).
type AuthorizationConfig struct {
	// Enabled enforces ACLs on every request. Off: everything is allowed
	// and the ACL APIs answer SECURITY_DISABLED.
	Enabled bool
	// SuperUsers may do anything (Kafka super.users).
	SuperUsers []security.Principal
	// AllowEveryoneIfNoACL allows requests on resources no ACL names
	// (Kafka allow.everyone.if.no.acl.found; default false).
	AllowEveryoneIfNoACL bool
}

// aclNamespace is the SystemStore namespace of the ACLs.
const aclNamespace = "acl"

// aclState is the gateway's authorizer.
type aclState struct {
	authz *acl.Authorizer // nil: authorization off
	// ready is set once the stored ACLs are loaded; until then only super
	// users are allowed (Kafka's AuthorizerNotReadyException).
	ready atomic.Bool
	// mu orders ACL changes: a store write and the index change it
	// mirrors happen together, and a re-read of the store (syncACLs)
	// between them never.
	mu sync.Mutex
	// seen is the stored ACLs' version the authorizer was read at
	// (sharedstate.go); under mu.
	seen sharedVersion
}

// testPrincipalHook, when set (tests only, export_test.go), names the
// principal of a request by its client id, standing in for SASL and TLS.
var testPrincipalHook atomic.Pointer[func(clientID string) (security.Principal, bool)]

// initACL builds the authorizer and loads the stored ACLs: at once when the
// store answers, else retried in the background (only super users pass
// meanwhile).
func (g *Gateway) initACL() {
	cfg := g.cfg.Authorization
	if !cfg.Enabled {
		return
	}
	g.acl.authz = acl.New(acl.Config{SuperUsers: cfg.SuperUsers, AllowIfNoACL: cfg.AllowEveryoneIfNoACL})
	if !g.loadACLs() {
		g.retryInBackground(g.loadACLs)
	}
}

// retryInBackground calls load again, backing off from 100 ms to 5 s, until
// it reports success or the gateway closes: the start-up loads of state kept
// in the system store (ACLs, topic configs) when the store did not answer.
func (g *Gateway) retryInBackground(load func() bool) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
			select {
			case <-g.ctx.Done():
				return
			case <-time.After(wait):
			}
			if load() {
				return
			}
		}
	}()
}

// loadACLs reads the ACLs from the system store into the authorizer.
func (g *Gateway) loadACLs() bool {
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	g.acl.mu.Lock()
	err := g.syncACLs(ctx)
	g.acl.mu.Unlock()
	if err != nil {
		g.cfg.Logger.Warn("acl: loading the stored ACLs failed; only super users are allowed until they load", "err", err)
		return false
	}
	return true
}

// syncACLs makes the stored ACLs the authorizer's: read first when the
// gateway starts, then again whenever another gateway sharing the store
// changed them (sharedstate.go). The caller holds g.acl.mu.
func (g *Gateway) syncACLs(ctx context.Context) error {
	ready := g.acl.ready.Load()
	if ready && !g.sharesSystem() {
		return nil // its own changes are all there is
	}
	changed, v, err := g.changedSince(ctx, aclNamespace, g.acl.seen)
	if err != nil || ready && !changed {
		return err
	}
	stored, err := g.system.LoadSystem(ctx, aclNamespace)
	if err != nil {
		return err
	}
	bs := make([]acl.Binding, 0, len(stored))
	for k, v := range stored {
		b, err := acl.Unmarshal(v)
		if err != nil {
			g.cfg.Logger.Warn("acl: skipping a stored ACL that does not decode", "key", k, "err", err)
			continue
		}
		bs = append(bs, b)
	}
	g.acl.authz.Replace(bs)
	g.acl.seen = v
	g.acl.ready.Store(true)
	return nil
}

// syncACLsForAdmin brings the authorizer up to date before an ACL admin
// request reads it (DescribeAcls), so that it sees what was changed through
// another gateway a moment ago (sharedstate.go).
func (g *Gateway) syncACLsForAdmin() {
	g.acl.mu.Lock()
	defer g.acl.mu.Unlock()
	g.syncACLsLocked()
}

// syncACLsLocked is syncACLsForAdmin for a caller that holds g.acl.mu: a
// store that does not answer leaves the ACLs as last read (the request's
// own writes then fail on their own).
func (g *Gateway) syncACLsLocked() {
	ctx, cancel := context.WithTimeout(g.ctx, 5*time.Second)
	defer cancel()
	if err := g.syncACLs(ctx); err != nil {
		g.cfg.Logger.Warn("acl: reading the stored ACLs failed; answering from the last read", "err", err)
	}
}

// principalOf is who c acts as.
func (g *Gateway) principalOf(c *call) security.Principal {
	if h := testPrincipalHook.Load(); h != nil {
		if p, ok := (*h)(c.hdr.ClientID.S); ok {
			return p
		}
	}
	return c.cs.principal()
}

// hostOf returns the IP address of a "host:port" or "[v6]:port" address,
// as a view of it.
func hostOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		addr = addr[:i]
	}
	if len(addr) >= 2 && addr[0] == '[' && addr[len(addr)-1] == ']' {
		addr = addr[1 : len(addr)-1]
	}
	return addr
}

// allowed reports whether c may do op on the resource (rt, name), without
// counting a denial: for lists the authorizer filters (Metadata of all
// topics, ListGroups), where Kafka does not log denials either.
func (g *Gateway) allowed(c *call, op acl.Operation, rt acl.ResourceType, name string) bool {
	if g.acl.authz == nil {
		return true
	}
	return g.allowedAs(g.principalOf(c), hostOf(c.req.Conn().RemoteAddr), op, rt, name)
}

// allowedAs is allowed for principal p connected from host.
func (g *Gateway) allowedAs(p security.Principal, host string, op acl.Operation, rt acl.ResourceType, name string) bool {
	a := g.acl.authz
	if a == nil {
		return true
	}
	if !g.acl.ready.Load() {
		return a.IsSuperUser(p)
	}
	return a.Authorize(p, host, op, rt, name)
}

// describeFilter is whether a principal, from a host, may DESCRIBE a
// topic, for a consumer group's regex resolution to keep after the request
// (group.ConsumerHeartbeat.CanDescribe), and who it is for (Identity).
type describeFilter struct {
	principal security.Principal
	allowed   func(topic string) bool
	identity  string
}

// describeFilter returns c's DESCRIBE filter and the principal it asks
// for; nil without ACLs. A connection keeps its filter while its principal
// is the same (its host never changes), so a member's heartbeats reuse it.
func (g *Gateway) describeFilter(c *call) (func(topic string) bool, string) {
	if g.acl.authz == nil {
		return nil, ""
	}
	p := g.principalOf(c)
	if f := c.cs.auth.describe.Load(); f != nil && f.principal == p {
		return f.allowed, f.identity
	}
	host := strings.Clone(hostOf(c.req.Conn().RemoteAddr))
	p.Type, p.Name = strings.Clone(p.Type), strings.Clone(p.Name)
	f := &describeFilter{principal: p, identity: p.String(),
		allowed: func(topic string) bool { return g.allowedAs(p, host, acl.OpDescribe, acl.ResourceTopic, topic) }}
	c.cs.auth.describe.Store(f)
	return f.allowed, f.identity
}

// authorize reports whether c may do op on the resource (rt, name), and
// counts a denial under c's API (/metrics).
func (g *Gateway) authorize(c *call, op acl.Operation, rt acl.ResourceType, name string) bool {
	if g.acl.authz == nil {
		return true
	}
	if g.allowed(c, op, rt, name) {
		return true
	}
	g.metrics.countDenied(c.hdr.APIKey)
	return false
}

// topicCode is NONE when c may do op on topic, else
// TOPIC_AUTHORIZATION_FAILED (29).
func (g *Gateway) topicCode(c *call, op acl.Operation, topic string) wire.ErrorCode {
	if g.authorize(c, op, acl.ResourceTopic, topic) {
		return wire.NoError
	}
	return wire.TopicAuthorizationFailed
}

// groupCode is NONE when c may do op on group, else
// GROUP_AUTHORIZATION_FAILED (30).
func (g *Gateway) groupCode(c *call, op acl.Operation, group string) wire.ErrorCode {
	if g.authorize(c, op, acl.ResourceGroup, group) {
		return wire.NoError
	}
	return wire.GroupAuthorizationFailed
}

// clusterCode is NONE when c may do op on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED (31).
func (g *Gateway) clusterCode(c *call, op acl.Operation) wire.ErrorCode {
	if g.authorize(c, op, acl.ResourceCluster, acl.ClusterName) {
		return wire.NoError
	}
	return wire.ClusterAuthorizationFailed
}

// canCreateTopic reports whether c may create topic: CREATE on the cluster
// or on the topic (KafkaApis: Metadata auto-creation and CreateTopics).
func (g *Gateway) canCreateTopic(c *call, topic string) bool {
	return g.allowed(c, acl.OpCreate, acl.ResourceCluster, acl.ClusterName) || g.authorize(c, acl.OpCreate, acl.ResourceTopic, topic)
}

// canIdempotentWrite reports whether c may get a producer id without a
// transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic
// (KafkaApis.handleInitProducerIdRequest, KIP-679).
func (g *Gateway) canIdempotentWrite(c *call) bool {
	a := g.acl.authz
	if a == nil || g.allowed(c, acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName) {
		return true
	}
	if g.acl.ready.Load() && a.AuthorizeAny(g.principalOf(c), hostOf(c.req.Conn().RemoteAddr), acl.OpWrite, acl.ResourceTopic) {
		return true
	}
	g.metrics.countDenied(c.hdr.APIKey)
	return false
}

// configResourceCode is NONE when c may do op on a config resource, else
// the resource's authorization error (topic 29, broker 31).
func (g *Gateway) configResourceCode(c *call, op acl.Operation, t wire.ConfigResourceType, name string) wire.ErrorCode {
	if t == wire.ConfigResourceTopic {
		return g.topicCode(c, op, name)
	}
	return g.clusterCode(c, op)
}

// The messages of Kafka's authorization errors (Errors.*.message()).
const (
	msgClusterAuthFailed = "Cluster authorization failed."
	msgSecurityDisabled  = "No Authorizer is configured on the broker"
)

// aclFilter is a DescribeAcls or DeleteAcls filter as the authorizer takes it.
func aclFilter(f *wire.ACLFilter) acl.Filter {
	return acl.Filter{
		ResourceType: acl.ResourceType(f.ResourceType),
		ResourceName: f.ResourceName.S, HasName: f.ResourceName.Valid,
		PatternType: acl.PatternType(f.PatternType),
		Principal:   f.Principal.S, HasPrincipal: f.Principal.Valid,
		Host: f.Host.S, HasHost: f.Host.Valid,
		Operation:  acl.Operation(f.Operation),
		Permission: acl.Permission(f.Permission),
	}
}

// reportedOperations are the operations whose authorization KIP-430's
// authorized-operations fields report, per resource type (Kafka's
// AclEntry.supportedOperations).
var reportedOperations = map[acl.ResourceType][]acl.Operation{
	acl.ResourceTopic: {acl.OpRead, acl.OpWrite, acl.OpCreate, acl.OpDescribe, acl.OpDelete, acl.OpAlter,
		acl.OpDescribeConfigs, acl.OpAlterConfigs},
	acl.ResourceGroup: {acl.OpRead, acl.OpDescribe, acl.OpDelete, acl.OpDescribeConfigs, acl.OpAlterConfigs},
	acl.ResourceCluster: {acl.OpCreate, acl.OpClusterAction, acl.OpDescribeConfigs, acl.OpAlterConfigs,
		acl.OpIdempotentWrite, acl.OpAlter, acl.OpDescribe},
}

// authorizedOperations is the bit field of the operations c may do on the
// resource (rt, name), bit n for operation code n (KIP-430; Kafka's
// AuthHelper.authorizedOperations): every reported operation without ACLs.
// Denials are not counted: nothing was refused.
func (g *Gateway) authorizedOperations(c *call, rt acl.ResourceType, name string) int32 {
	var bits int32
	for _, op := range reportedOperations[rt] {
		if g.allowed(c, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// authorizedOperationsIf is authorizedOperations when asked for, else
// authorizedOperationsUnknown.
func (g *Gateway) authorizedOperationsIf(asked bool, c *call, rt acl.ResourceType, name string) int32 {
	if !asked {
		return authorizedOperationsUnknown
	}
	return g.authorizedOperations(c, rt, name)
}

// authorizedOperationsUnknown is Kafka's "not computed" value for
// TopicAuthorizedOperations (-2147483648).
const authorizedOperationsUnknown = -2147483648
