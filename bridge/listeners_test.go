package bridge_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/kiggytest"
)

// TestAdvertisedListeners: Metadata, DescribeCluster and FindCoordinator
// give a connection its listener's advertised address; an empty host or
// port 0 in it is the one the client reached (docs/design/security.md §4).
// The test gateway's listener is unnamed ("").
func TestAdvertisedListeners(t *testing.T) {
	for _, c := range []struct {
		name string
		adv  bridge.AdvertisedAddr
		host string // "" = the reached host
		port int32  // 0 = the reached port
	}{
		{"host-and-port", bridge.AdvertisedAddr{Host: "kafka.example", Port: 19092}, "kafka.example", 19092},
		{"host-only", bridge.AdvertisedAddr{Host: "kafka.example"}, "kafka.example", 0},
		{"port-only", bridge.AdvertisedAddr{Port: 19093}, "", 19093},
	} {
		t.Run(c.name, func(t *testing.T) {
			gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{
				AdvertisedHost:      "global.example", // the per-listener entry wins
				AdvertisedPort:      1,
				AdvertisedListeners: map[string]bridge.AdvertisedAddr{"": c.adv},
			}})
			rh, rp, _ := net.SplitHostPort(gw.Addr)
			wantHost, wantPort := c.host, c.port
			if wantHost == "" {
				wantHost = rh
			}
			if wantPort == 0 {
				n, _ := strconv.Atoi(rp)
				wantPort = int32(n)
			}
			bc := dialBench(t, gw.Addr)
			ask := func(req kmsg.Request, resp kmsg.Response) {
				t.Helper()
				req.SetVersion(req.MaxVersion())
				resp.SetVersion(req.GetVersion())
				body := bc.roundTrip(t, requestFrame(req, 1))
				if err := resp.ReadFrom(body[5:]); err != nil { // correlation id + header tags
					t.Fatalf("%T: %v", resp, err)
				}
			}
			md := kmsg.NewPtrMetadataResponse()
			ask(kmsg.NewPtrMetadataRequest(), md)
			if len(md.Brokers) != 1 || md.Brokers[0].Host != wantHost || md.Brokers[0].Port != wantPort {
				t.Errorf("Metadata brokers %+v, want %s:%d", md.Brokers, wantHost, wantPort)
			}
			dc := kmsg.NewPtrDescribeClusterResponse()
			ask(kmsg.NewPtrDescribeClusterRequest(), dc)
			if len(dc.Brokers) != 1 || dc.Brokers[0].Host != wantHost || dc.Brokers[0].Port != wantPort {
				t.Errorf("DescribeCluster brokers %+v, want %s:%d", dc.Brokers, wantHost, wantPort)
			}
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKeys = []string{"g"}
			fr := kmsg.NewPtrFindCoordinatorResponse()
			ask(fc, fr)
			if len(fr.Coordinators) != 1 || fr.Coordinators[0].Host != wantHost || fr.Coordinators[0].Port != wantPort {
				t.Errorf("FindCoordinator %+v, want %s:%d", fr.Coordinators, wantHost, wantPort)
			}
		})
	}
}
