package bridge

// Authorization: the ACL authorizer on every request, and the ACL admin APIs
// (DescribeAcls 29, CreateAcls 30, DeleteAcls 31). docs/design/security.md §6
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
	// mirrors happen together.
	mu sync.Mutex
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
	stored, err := g.system.LoadSystem(ctx, aclNamespace)
	if err != nil {
		g.cfg.Logger.Warn("acl: loading the stored ACLs failed; only super users are allowed until they load", "err", err)
		return false
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
	g.acl.authz.Add(bs...)
	g.acl.ready.Store(true)
	return true
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
	a := g.acl.authz
	if a == nil {
		return true
	}
	p := g.principalOf(c)
	if !g.acl.ready.Load() {
		return a.IsSuperUser(p)
	}
	return a.Authorize(p, hostOf(c.req.Conn().RemoteAddr), op, rt, name)
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

// describeAcls answers DescribeAcls v1–3 (AclApis.handleDescribeAcls):
// DESCRIBE on the cluster, then every ACL the filter matches, grouped by
// resource pattern.
func (g *Gateway) describeAcls(c *call) bool {
	var req wire.DescribeAclsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	var resp wire.DescribeAclsResponse
	f := aclFilter(&req.Filter)
	switch {
	case g.acl.authz == nil:
		resp.ErrorCode, resp.ErrorMessage = wire.SecurityDisabled, wire.NullStringOf(msgSecurityDisabled)
	case g.clusterCode(c, acl.OpDescribe) != wire.NoError:
		resp.ErrorCode, resp.ErrorMessage = wire.ClusterAuthorizationFailed, wire.NullStringOf(msgClusterAuthFailed)
	case !f.Valid():
		resp.ErrorCode, resp.ErrorMessage = wire.InvalidRequest, wire.NullStringOf("The filter contains UNKNOWN elements")
	default:
		for _, b := range g.acl.authz.Describe(f) {
			n := len(resp.Resources)
			if n == 0 || !samePattern(&resp.Resources[n-1], &b) {
				resp.Resources = append(resp.Resources, wire.DescribeAclsResource{
					ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName, PatternType: int8(b.PatternType)})
				n++
			}
			r := &resp.Resources[n-1]
			r.ACLs = append(r.ACLs, wire.ACLDescription{Principal: b.Principal, Host: b.Host,
				Operation: int8(b.Operation), Permission: int8(b.Permission)})
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

func samePattern(r *wire.DescribeAclsResource, b *acl.Binding) bool {
	return r.ResourceType == int8(b.ResourceType) && r.PatternType == int8(b.PatternType) && r.ResourceName == b.ResourceName
}

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

// createAcls answers CreateAcls v1–3 (AclApis.handleCreateAcls): ALTER on
// the cluster, then each creation on its own: INVALID_REQUEST (42) for an
// ACL that cannot be stored, else stored in the system store and indexed;
// an ACL that exists already succeeds without change.
func (g *Gateway) createAcls(c *call) bool {
	var req wire.CreateAclsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := wire.CreateAclsResponse{Results: make([]wire.ACLResult, len(req.Creations))}
	fail := func(code wire.ErrorCode, msg string) {
		for i := range resp.Results {
			resp.Results[i] = wire.ACLResult{ErrorCode: code, ErrorMessage: wire.NullStringOf(msg)}
		}
	}
	switch {
	case g.acl.authz == nil:
		fail(wire.SecurityDisabled, "No Authorizer is configured.")
	case g.clusterCode(c, acl.OpAlter) != wire.NoError:
		fail(wire.ClusterAuthorizationFailed, msgClusterAuthFailed)
	default:
		g.acl.mu.Lock()
		for i, cr := range req.Creations {
			// Copies: the request's strings alias the frame.
			b := acl.Binding{
				ResourceType: acl.ResourceType(cr.ResourceType), ResourceName: strings.Clone(cr.ResourceName),
				PatternType: acl.PatternType(cr.PatternType), Principal: strings.Clone(cr.Principal),
				Host: strings.Clone(cr.Host), Operation: acl.Operation(cr.Operation), Permission: acl.Permission(cr.Permission),
			}
			if err := b.Validate(); err != nil {
				resp.Results[i] = wire.ACLResult{ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf(aclErrorMessage(err))}
				continue
			}
			if err := g.system.PutSystem(g.ctx, aclNamespace, acl.Key(b), acl.Marshal(b)); err != nil {
				g.cfg.Logger.Warn("acl: storing an ACL failed", "acl", b.String(), "err", err)
				resp.Results[i] = wire.ACLResult{ErrorCode: wire.UnknownServerError, ErrorMessage: wire.NullStringOf("storing the ACL failed: " + err.Error())}
				continue
			}
			g.acl.authz.Add(b)
		}
		g.acl.mu.Unlock()
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// aclErrorMessage is the text of a validation error without the package
// prefix, as Kafka's InvalidRequestException messages read.
func aclErrorMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "acl: ")
}

// deleteAcls answers DeleteAcls v1–3 (AclApis.handleDeleteAcls): ALTER on
// the cluster, then per filter the ACLs it matched, each deleted from the
// system store and the index.
func (g *Gateway) deleteAcls(c *call) bool {
	var req wire.DeleteAclsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := wire.DeleteAclsResponse{FilterResults: make([]wire.DeleteAclsFilterResult, len(req.Filters))}
	fail := func(code wire.ErrorCode, msg string) {
		for i := range resp.FilterResults {
			resp.FilterResults[i] = wire.DeleteAclsFilterResult{ErrorCode: code, ErrorMessage: wire.NullStringOf(msg)}
		}
	}
	switch {
	case g.acl.authz == nil:
		fail(wire.SecurityDisabled, "No Authorizer is configured.")
	case g.clusterCode(c, acl.OpAlter) != wire.NoError:
		fail(wire.ClusterAuthorizationFailed, msgClusterAuthFailed)
	default:
		g.acl.mu.Lock()
		for i := range req.Filters {
			f := aclFilter(&req.Filters[i])
			out := &resp.FilterResults[i]
			if !f.Valid() {
				out.ErrorCode, out.ErrorMessage = wire.InvalidRequest, wire.NullStringOf("The filter contains UNKNOWN elements")
				continue
			}
			for _, b := range g.acl.authz.Describe(f) {
				m := wire.DeleteAclsMatchingACL{ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName,
					PatternType: int8(b.PatternType), Principal: b.Principal, Host: b.Host,
					Operation: int8(b.Operation), Permission: int8(b.Permission)}
				if err := g.system.PutSystem(g.ctx, aclNamespace, acl.Key(b), nil); err != nil {
					g.cfg.Logger.Warn("acl: deleting a stored ACL failed", "acl", b.String(), "err", err)
					m.ErrorCode, m.ErrorMessage = wire.UnknownServerError, wire.NullStringOf("deleting the ACL failed: "+err.Error())
				} else {
					g.acl.authz.Remove(exactFilter(b))
				}
				out.MatchingACLs = append(out.MatchingACLs, m)
			}
		}
		g.acl.mu.Unlock()
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// exactFilter matches b alone.
func exactFilter(b acl.Binding) acl.Filter {
	return acl.Filter{ResourceType: b.ResourceType, ResourceName: b.ResourceName, HasName: true, PatternType: b.PatternType,
		Principal: b.Principal, HasPrincipal: true, Host: b.Host, HasHost: true, Operation: b.Operation, Permission: b.Permission}
}
