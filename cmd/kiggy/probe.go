package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// probeTimeout bounds one `kiggy probe`.
const probeTimeout = 3 * time.Second

// wantProbe reports whether the command line is `kiggy probe [URL]`: the
// container image's health check (deploy/Containerfile HEALTHCHECK), which
// has no shell or curl to call /readyz with.
func wantProbe(args []string) bool { return len(args) > 0 && args[0] == "probe" }

// probe GETs url, or the admin listener's /readyz from KIGGY_ADMIN_ADDR in
// env, and returns 0 when it answers 200, else 1 with the reason on w.
func probe(args, env []string, w io.Writer) int {
	url := ""
	if len(args) > 1 {
		url = args[1]
	} else {
		addr := lookupEnv(env, "KIGGY_ADMIN_ADDR")
		if addr == "" {
			fmt.Fprintln(w, "kiggy probe: no URL and no KIGGY_ADMIN_ADDR (the admin listener)")
			return 1
		}
		url = "http://" + loopbackFor(addr) + "/readyz"
	}
	cl := http.Client{Timeout: probeTimeout}
	resp, err := cl.Get(url)
	if err != nil {
		fmt.Fprintf(w, "kiggy probe: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(w, "kiggy probe: %s: %s %s\n", url, resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	return 0
}

// loopbackFor turns a listen address into one to dial from the same host:
// an unspecified host (0.0.0.0, ::, empty) becomes 127.0.0.1.
func loopbackFor(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// lookupEnv returns the last value of key in env ("KEY=value" entries).
func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
