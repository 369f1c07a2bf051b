package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out strings.Builder
	if code := probe([]string{"probe"}, []string{"KIGGY_ADMIN_ADDR=" + addr}, &out); code != 0 {
		t.Fatalf("ready: exit %d: %s", code, out.String())
	}
	if code := probe([]string{"probe", srv.URL + "/readyz"}, nil, &out); code != 0 {
		t.Fatalf("ready, by URL: exit %d: %s", code, out.String())
	}
	ready = false
	out.Reset()
	if code := probe([]string{"probe"}, []string{"KIGGY_ADMIN_ADDR=" + addr}, &out); code != 1 || !strings.Contains(out.String(), "503") {
		t.Fatalf("not ready: exit %d: %s", code, out.String())
	}
	srv.Close()
	if code := probe([]string{"probe"}, []string{"KIGGY_ADMIN_ADDR=" + addr}, &out); code != 1 {
		t.Fatalf("nothing listening: exit %d", code)
	}
	if code := probe([]string{"probe"}, nil, &out); code != 1 {
		t.Fatalf("no admin address: exit %d", code)
	}
	if got := loopbackFor("0.0.0.0:9644"); got != "127.0.0.1:9644" {
		t.Fatalf("loopbackFor: %s", got)
	}
	if got := loopbackFor("[::]:9644"); got != "127.0.0.1:9644" {
		t.Fatalf("loopbackFor ::: %s", got)
	}
}
