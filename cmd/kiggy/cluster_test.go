package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/cluster"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security"
)

// TestClusterRefusals: a multi-instance configuration on the embedded log,
// or an incomplete one, stops kiggy at start with a message naming the fix.
func TestClusterRefusals(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-membership", "iggy"}, "embedded log is single-instance"},
		{[]string{"--cluster-membership", "static", "--peers", "1=a:1"}, "embedded log is single-instance"},
		{[]string{"--cluster-membership", "zk", "--iggy-addr", "x:1"}, "want none, iggy or static"},
		{[]string{"--cluster-membership", "static", "--iggy-addr", "x:1"}, "needs --peers"},
		{[]string{"--peers", "1=a:1"}, "needs --cluster-membership static"},
		{[]string{"--cluster-membership", "iggy", "--iggy-addr", "x:1", "--membership-heartbeat", "1s", "--membership-timeout", "2s"}, "at least 4"},
	}
	for _, c := range cases {
		var o options
		s := newSettings("kiggy")
		registerOptions(s, &o)
		if err := s.parse(c.args, nil); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		err := checkCluster(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
	var o options
	s := newSettings("kiggy")
	registerOptions(s, &o)
	_ = s.parse([]string{"--listen", "0.0.0.0:9092", "--cluster-membership", "iggy", "--iggy-addr", "x:1"}, nil)
	if err := resolveListeners(s, &o); err != nil {
		t.Fatal(err)
	}
	if err := checkCluster(o); err != nil {
		t.Fatal(err)
	}
	if _, err := announcedEndpoints(o, nil); err == nil || !strings.Contains(err.Error(), "--advertised-host") {
		t.Errorf("0.0.0.0 listener without --advertised-host: %v", err)
	}
	peers, err := parsePeers("1=h1:9092, 2=h2:9093")
	if err != nil || len(peers) != 2 || peers[1].NodeID != 2 || peers[1].Endpoints[0].Port != 9093 {
		t.Errorf("parsePeers: %+v %v", peers, err)
	}
	if _, err := parsePeers("1=h1"); err == nil {
		t.Error("parsePeers accepted a peer without a port")
	}
}

// TestStartPeers: the instances of a cluster reach each other over the
// inter-broker listener when it is PLAINTEXT, or SASL_PLAINTEXT with a
// user; otherwise transactions are refused (no Peers) with a warning; a
// listener name that does not exist stops kiggy.
func TestStartPeers(t *testing.T) {
	pl, err := cluster.NewStatic(1, []store.Broker{{NodeID: 1, Endpoints: []store.Endpoint{{Listener: "INTERNAL", Host: "127.0.0.1", Port: 9092}}}})
	if err != nil {
		t.Fatal(err)
	}
	ls := &listenerSetup{protocols: map[string]security.Protocol{
		"PLAIN": security.Plaintext, "INTERNAL": security.SASLPlaintext, "TLS": security.SSL}}
	logger := slog.New(slog.DiscardHandler)
	cases := []struct {
		listener, user string
		want           bool
		err            bool
	}{
		{"", "", true, false}, // the first listener: PLAIN
		{"PLAIN", "", true, false},
		{"INTERNAL", "kiggy", true, false},
		{"INTERNAL", "", false, false},
		{"TLS", "", false, false},
		{"NONE", "", false, true},
	}
	for _, c := range cases {
		var o options
		o.nodeID = 1
		o.lst.specs = []listenerSpec{{name: "PLAIN"}}
		o.cluster.interBrokerListener, o.cluster.interBrokerUser = c.listener, c.user
		peers, closePeers, err := startPeers(o, ls, pl, logger)
		if (err != nil) != c.err {
			t.Fatalf("%q/%q: error %v, want one: %v", c.listener, c.user, err, c.err)
		}
		if err != nil {
			continue
		}
		if (peers != nil) != c.want {
			t.Errorf("%q/%q: peers %v, want some: %v", c.listener, c.user, peers, c.want)
		}
		closePeers()
	}
	if peers, _, err := startPeers(options{}, ls, nil, logger); peers != nil || err != nil {
		t.Errorf("a single instance: peers %v, err %v; want neither", peers, err)
	}
}
