// Package acl is kiggy's authorizer: Kafka's ACL model (resource types,
// pattern types, operations, permissions), an index of the ACLs that makes a
// check cheap and allocation-free, and the filters DescribeAcls and
// DeleteAcls match with. docs/design/security.md §6 describes the model and
// the decision rules; the numeric codes are Kafka's wire values.
package acl

import (
	"errors"
	"strings"
)

// ResourceType is the kind of resource an ACL guards (Kafka's ResourceType
// codes).
type ResourceType int8

// Resource types. Unknown and Any are only meaningful in filters.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// numResourceTypes bounds the index's per-type array.
const numResourceTypes = 8

var resourceNames = [...]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}

// String returns Kafka's name of the resource type.
func (r ResourceType) String() string { return nameOf(resourceNames[:], int8(r)) }

// Concrete reports whether r names a real resource type (not Unknown/Any).
func (r ResourceType) Concrete() bool { return r >= ResourceTopic && r <= ResourceUser }

// PatternType says how an ACL's resource name matches (KIP-290).
type PatternType int8

// Pattern types. An ACL is Literal or Prefixed; Any and Match are filters:
// Any matches patterns by their exact name whatever their type, Match
// matches the patterns that would apply to a resource of the filter's name.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

var patternNames = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}

// String returns Kafka's name of the pattern type.
func (p PatternType) String() string { return nameOf(patternNames[:], int8(p)) }

// Operation is what a request does to a resource (Kafka's AclOperation
// codes).
type Operation int8

// Operations. Unknown and Any are only meaningful in filters; All in an ACL
// covers every operation.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

var operationNames = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
	"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS",
	"TWO_PHASE_COMMIT"}

// String returns Kafka's name of the operation.
func (o Operation) String() string { return nameOf(operationNames[:], int8(o)) }

// Concrete reports whether o may appear in an ACL (not Unknown/Any).
func (o Operation) Concrete() bool { return o >= OpAll && o <= OpTwoPhaseCommit }

// Permission is an ACL's verdict (Kafka's AclPermissionType codes).
type Permission int8

// Permissions. Unknown and Any are only meaningful in filters.
const (
	PermUnknown Permission = 0
	PermAny     Permission = 1
	PermDeny    Permission = 2
	PermAllow   Permission = 3
)

var permissionNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}

// String returns Kafka's name of the permission.
func (p Permission) String() string { return nameOf(permissionNames[:], int8(p)) }

func nameOf(names []string, v int8) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return "UNKNOWN"
}

// Wildcard is the resource name, host and principal name that match every
// resource, host or principal ("*").
const Wildcard = "*"

// WildcardPrincipal is the principal of an ACL for every principal.
const WildcardPrincipal = "User:*"

// ClusterName is the one name of the CLUSTER resource (Kafka's
// "kafka-cluster").
const ClusterName = "kafka-cluster"

// Binding is one ACL: a resource pattern and an entry saying who may or may
// not do what from where.
type Binding struct {
	// ResourceType, ResourceName and PatternType are the resource pattern.
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	// Principal is "Type:Name", or "User:*" for every principal.
	Principal string
	// Host is a client IP address, or "*" for every host.
	Host       string
	Operation  Operation
	Permission Permission
}

// Validation errors of a Binding (Kafka answers them with INVALID_REQUEST).
var (
	ErrResourceType = errors.New("acl: invalid resource type")
	ErrPatternType  = errors.New("acl: invalid pattern type: an ACL is LITERAL or PREFIXED")
	ErrOperation    = errors.New("acl: invalid operation")
	ErrPermission   = errors.New("acl: invalid permission type: an ACL is ALLOW or DENY")
	ErrEmptyName    = errors.New("acl: invalid empty resource name")
	ErrClusterName  = errors.New("acl: the only valid name for the CLUSTER resource is " + ClusterName)
	ErrPrincipal    = errors.New("acl: principal must be Type:Name")
	ErrHost         = errors.New("acl: host must be an address or *")
)

// Validate reports why b cannot be stored as an ACL, as Kafka's CreateAcls
// checks (AclApis and the controller's AclControlManager): a concrete
// resource type, LITERAL or PREFIXED, a concrete operation, ALLOW or DENY, a
// non-empty name ("kafka-cluster" for CLUSTER), a "Type:Name" principal.
func (b *Binding) Validate() error {
	switch {
	case !b.ResourceType.Concrete():
		return ErrResourceType
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return ErrPatternType
	case !b.Operation.Concrete():
		return ErrOperation
	case b.Permission != PermAllow && b.Permission != PermDeny:
		return ErrPermission
	case b.ResourceName == "":
		return ErrEmptyName
	case b.ResourceType == ResourceCluster && b.ResourceName != ClusterName:
		return ErrClusterName
	case b.Host == "":
		return ErrHost
	}
	typ, name, ok := strings.Cut(b.Principal, ":")
	if !ok || typ == "" || name == "" {
		return ErrPrincipal
	}
	return nil
}

// String returns the binding as Kafka's AclBinding prints it, for logs.
func (b Binding) String() string {
	return "(pattern=ResourcePattern(resourceType=" + b.ResourceType.String() + ", name=" + b.ResourceName +
		", patternType=" + b.PatternType.String() + "), entry=(principal=" + b.Principal + ", host=" + b.Host +
		", operation=" + b.Operation.String() + ", permissionType=" + b.Permission.String() + "))"
}

// Filter selects bindings (DescribeAcls, DeleteAcls): Kafka's
// AclBindingFilter. A nil-able string field is matched only when Has* is
// set.
type Filter struct {
	ResourceType ResourceType
	// ResourceName is matched when HasName (null on the wire matches any).
	ResourceName string
	HasName      bool
	PatternType  PatternType
	// Principal is matched when HasPrincipal.
	Principal    string
	HasPrincipal bool
	// Host is matched when HasHost.
	Host       string
	HasHost    bool
	Operation  Operation
	Permission Permission
}

// Valid reports whether f is a filter Kafka accepts: no UNKNOWN (or out of
// range) value in it.
func (f *Filter) Valid() bool {
	return f.ResourceType >= ResourceAny && f.ResourceType <= ResourceUser &&
		f.PatternType >= PatternAny && f.PatternType <= PatternPrefixed &&
		f.Operation >= OpAny && f.Operation <= OpTwoPhaseCommit &&
		f.Permission >= PermAny && f.Permission <= PermAllow
}

// Matches reports whether f selects b, with Kafka's AclBindingFilter rules:
// ANY matches every value; a null string every string; pattern type ANY
// compares names exactly whatever the pattern type; MATCH selects the
// patterns that apply to a resource called ResourceName (that literal name,
// the literal wildcard, and every prefix of it).
func (f *Filter) Matches(b *Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.HasName {
		switch {
		case f.PatternType == PatternAny || f.PatternType == b.PatternType:
			if f.ResourceName != b.ResourceName {
				return false
			}
		case b.PatternType == PatternLiteral:
			if f.ResourceName != b.ResourceName && b.ResourceName != Wildcard {
				return false
			}
		case b.PatternType == PatternPrefixed:
			if !strings.HasPrefix(f.ResourceName, b.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	if f.HasPrincipal && f.Principal != b.Principal {
		return false
	}
	if f.HasHost && f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == PermAny || f.Permission == b.Permission
}
