package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/cluster"
	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/kclient"
	"github.com/kiggy-io/kiggy/security"
)

// clusterOptions are the knobs of several instances as one Kafka cluster
// (docs/design/cluster.md).
type clusterOptions struct {
	membership         string
	peers              string
	heartbeat, timeout time.Duration
	// The instances' requests to each other (transactions,
	// docs/design/transactions.md §7).
	interBrokerListener            string
	interBrokerUser, interBrokerPw string
	stateRefresh                   time.Duration
}

// commitTail is how often a cluster member reads the commit log for the
// other instances' commits (docs/design/cluster.md §9).
const commitTail = 200 * time.Millisecond

func registerClusterOptions(s *settings, o *clusterOptions) {
	s.String("Cluster", "cluster-membership", &o.membership, "none", `how instances over one Iggy stream find each other: "none" (this instance alone), "iggy" (heartbeats in the system stream; dead ones fail over) or "static" (--peers; no failover); not on the embedded log`)
	s.String("Cluster", "peers", &o.peers, "", `with --cluster-membership static: every instance as id=host:port, comma separated, this one included`)
	s.Duration("Cluster", "membership-heartbeat", &o.heartbeat, cluster.DefaultHeartbeat, 10*time.Millisecond, time.Minute, "how often an instance heartbeats in the membership log")
	s.String("Cluster", "inter-broker-listener-name", &o.interBrokerListener, "", "listener the instances send each other requests on (transaction markers; Kafka inter.broker.listener.name): PLAINTEXT or SASL_PLAINTEXT with PLAIN; empty = the first listener")
	s.String("Cluster", "inter-broker-sasl-username", &o.interBrokerUser, "", "SASL PLAIN user an instance authenticates as to the others when the inter-broker listener is SASL_PLAINTEXT (with ACLs, make it a super user, as Kafka's inter-broker principal)")
	s.String("Cluster", "inter-broker-sasl-password", &o.interBrokerPw, "", "password of --inter-broker-sasl-username")
	s.Duration("Cluster", "membership-timeout", &o.timeout, cluster.DefaultTimeout, 40*time.Millisecond, 10*time.Minute, "an instance without a heartbeat for this long is dead for all; its partitions and groups move (at least 4 × the heartbeat)")
	s.Duration("Cluster", "state-refresh", &o.stateRefresh, bridge.DefaultStateRefresh, 10*time.Millisecond, time.Hour, "how often an instance on Iggy asks the system store whether another instance on the same Iggy changed ACLs, SCRAM credentials, client quotas, topic configs or log starts (one Iggy poll), and reads those that did; admin requests, and logins of users it does not know, read them at once (with or without --cluster-membership); with --cluster-membership iggy a change's notice in the membership log makes the others read at once")
}

// clustered reports whether the options ask for several instances.
func (o *clusterOptions) clustered() bool { return o.membership != "none" }

// checkCluster refuses what cannot work before anything is opened.
func checkCluster(o options) error {
	c := o.cluster
	switch c.membership {
	case "none":
		if c.peers != "" {
			return errors.New("--peers needs --cluster-membership static")
		}
		return nil
	case "iggy", "static":
	default:
		return fmt.Errorf("--cluster-membership %q: want none, iggy or static", c.membership)
	}
	if o.iggyAddr == "" {
		// docs/design/cluster.md §11: the embedded log lives in one process.
		return fmt.Errorf("--cluster-membership %s: the embedded log is single-instance (its records live in this process only); run the instances on Iggy (--iggy-addr)", c.membership)
	}
	if c.membership == "static" && c.peers == "" {
		return errors.New("--cluster-membership static needs --peers")
	}
	if c.membership == "static" && len(o.lst.specs) > 1 {
		return errors.New("--cluster-membership static gives one address per peer: it serves one listener; use --cluster-membership iggy with several --listeners")
	}
	if c.membership == "iggy" && c.peers != "" {
		return errors.New("--peers is for --cluster-membership static; with iggy the instances find each other")
	}
	if c.timeout < 4*c.heartbeat {
		return fmt.Errorf("--membership-timeout %v must be at least 4 × --membership-heartbeat %v", c.timeout, c.heartbeat)
	}
	return nil
}

// announcedEndpoints are the addresses this instance announces to the
// others, one per listener under the listener's name (the name a client's
// connection carries, engine.ConnInfo.Listener): the listener's advertised
// address (--advertised-listeners, or --advertised-host/--advertised-port
// for the one-listener shorthand), else the address it binds.
func announcedEndpoints(o options, ls *listenerSetup) ([]store.Endpoint, error) {
	var out []store.Endpoint
	for _, sp := range o.lst.specs {
		host, portStr, err := net.SplitHostPort(sp.addr)
		if err != nil {
			return nil, fmt.Errorf("listener %s %s: %w", sp.name, sp.addr, err)
		}
		port, _ := strconv.Atoi(portStr)
		if o.advertisedHost != "" {
			host = o.advertisedHost
		}
		if o.advertisedPort != 0 {
			port = int(o.advertisedPort)
		}
		if ls != nil {
			if adv, ok := ls.advertised[sp.name]; ok {
				if adv.Host != "" {
					host = adv.Host
				}
				if adv.Port != 0 {
					port = int(adv.Port)
				}
			}
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			return nil, fmt.Errorf("--cluster-membership: the other instances send clients here: set --advertised-host or --advertised-listeners (listener %s at %s names no host clients can reach)", sp.name, sp.addr)
		}
		if port <= 0 || port > 65535 {
			return nil, fmt.Errorf("--cluster-membership: listener %s: set a port to bind or advertise (the port is announced before the listener binds)", sp.name)
		}
		out = append(out, store.Endpoint{Listener: sp.name, Host: host, Port: int32(port)})
	}
	return out, nil
}

// parsePeers reads --peers: id=host:port,...
func parsePeers(s string) ([]store.Broker, error) {
	var out []store.Broker
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		id, addr, ok := strings.Cut(p, "=")
		host, portStr, err := net.SplitHostPort(addr)
		n, err2 := strconv.ParseInt(id, 10, 32)
		port, err3 := strconv.Atoi(portStr)
		if !ok || err != nil || err2 != nil || err3 != nil || n < 0 || host == "" || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("--peers %q: want id=host:port", p)
		}
		out = append(out, store.Broker{NodeID: int32(n), Endpoints: []store.Endpoint{{Host: host, Port: int32(port)}}})
	}
	return out, nil
}

// startCluster returns the placement of --cluster-membership (nil for
// none) and what stops it: a graceful leave.
func startCluster(ctx context.Context, o options, ls *listenerSetup, backend store.Log, logger *slog.Logger) (store.Placement, func(), error) {
	switch o.cluster.membership {
	case "static":
		peers, err := parsePeers(o.cluster.peers)
		if err != nil {
			return nil, nil, err
		}
		// A peer's one address serves the one listener (checkCluster).
		for i := range peers {
			peers[i].Endpoints[0].Listener = o.lst.specs[0].name
		}
		s, err := cluster.NewStatic(int32(o.nodeID), peers)
		if err != nil {
			return nil, nil, fmt.Errorf("--peers: %w", err)
		}
		return s, func() {}, nil
	case "iggy":
		ic, ok := backend.(*iggy.Client)
		if !ok || ic.SystemLog() == nil {
			return nil, nil, errors.New("--cluster-membership iggy: the backend has no system stream")
		}
		eps, err := announcedEndpoints(o, ls)
		if err != nil {
			return nil, nil, err
		}
		m, err := cluster.Start(ctx, cluster.Config{
			NodeID: int32(o.nodeID), Endpoints: eps, Log: ic.SystemLog(),
			Topic:     cluster.DefaultTopic + "." + o.iggyStream,
			Heartbeat: o.cluster.heartbeat, Timeout: o.cluster.timeout, Logger: logger,
		})
		if err != nil {
			return nil, nil, err
		}
		var once sync.Once
		return m, func() {
			once.Do(func() {
				if err := m.Close(); err != nil {
					logger.Warn("cluster: leaving", "err", err)
				}
			})
		}, nil
	}
	return nil, func() {}, nil
}

// clusterCommitTail is the Iggy client's CommitTail: the other instances'
// commits are read only when there are other instances.
func clusterCommitTail(o options) time.Duration {
	if o.cluster.clustered() {
		return commitTail
	}
	return 0
}

// clusterDefaults: the instances of a cluster hand out producer ids from
// one space, so each needs its own --instance-id (the high bits of the id,
// docs/design/record-mapping.md §6); left at 0 it is the node id's low 16
// bits (docs/design/cluster.md §8).
func clusterDefaults(o *options) {
	if o.cluster.clustered() && o.instanceID == 0 {
		o.instanceID = o.nodeID & 0xffff
	}
}

// startPeers returns the client the instances of a cluster send each other
// requests with (bridge.Config.Peers; nil without a cluster, and, with a
// warning, when the inter-broker listener cannot be used: transactions are
// then refused) and what closes it.
func startPeers(o options, ls *listenerSetup, placement store.Placement, logger *slog.Logger) (bridge.Peers, func(), error) {
	if placement == nil {
		return nil, func() {}, nil
	}
	name := o.cluster.interBrokerListener
	if name == "" {
		name = o.lst.specs[0].name
	}
	proto, ok := ls.protocols[name]
	if !ok {
		return nil, nil, fmt.Errorf("--inter-broker-listener-name %q: no such listener", name)
	}
	var auth *kclient.SASL
	switch {
	case proto == security.Plaintext:
	case proto == security.SASLPlaintext && o.cluster.interBrokerUser != "":
		auth = &kclient.SASL{Mechanism: "PLAIN", Username: o.cluster.interBrokerUser, Password: o.cluster.interBrokerPw}
	default:
		logger.Warn("cluster: transactions are refused: the instances send each other transaction markers over a PLAINTEXT listener, or a SASL_PLAINTEXT one with --inter-broker-sasl-username",
			"listener", name, "protocol", proto.String())
		return nil, func() {}, nil
	}
	p := kclient.New(kclient.Config{
		ClientID: "kiggy-" + strconv.FormatInt(o.nodeID, 10),
		SASL:     auth,
		Logger:   logger,
		Resolve: func(node int32) (string, bool) {
			for _, b := range placement.Brokers() {
				if b.NodeID != node {
					continue
				}
				for _, e := range b.Endpoints {
					if e.Listener == name {
						return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
					}
				}
			}
			return "", false
		},
	})
	return p, func() { p.Close() }, nil
}
