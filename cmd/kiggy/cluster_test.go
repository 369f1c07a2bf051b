package main

import (
	"strings"
	"testing"
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
