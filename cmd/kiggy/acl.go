package main

import (
	"fmt"
	"strings"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/security"
)

// aclOptions are the authorization knobs (docs/design/security.md §6).
type aclOptions struct {
	enabled, allowIfNoACL bool
	superUsers            string
}

func registerACLOptions(s *settings, o *aclOptions) {
	s.Bool("Authorization", "acl-enabled", &o.enabled, false, "enforce Kafka ACLs on every request (Kafka authorizer.class.name = StandardAuthorizer); off = every request is allowed and the ACL APIs answer SECURITY_DISABLED")
	s.String("Authorization", "super-users", &o.superUsers, "", "principals allowed everything, separated by semicolons: User:admin;User:bob (Kafka super.users)")
	s.Bool("Authorization", "allow-everyone-if-no-acl-found", &o.allowIfNoACL, false, "allow requests on a resource that no ACL names (Kafka allow.everyone.if.no.acl.found)")
}

// authorization turns the options into the gateway's configuration.
func (o *aclOptions) authorization() (bridge.AuthorizationConfig, error) {
	cfg := bridge.AuthorizationConfig{Enabled: o.enabled, AllowEveryoneIfNoACL: o.allowIfNoACL}
	for _, s := range strings.Split(o.superUsers, ";") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := security.ParsePrincipal(s)
		if err != nil {
			return cfg, fmt.Errorf("--super-users %q: %w", s, err)
		}
		cfg.SuperUsers = append(cfg.SuperUsers, p)
	}
	return cfg, nil
}
