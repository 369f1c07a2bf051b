package bridge

import "testing"

func TestHostOf(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:9092":   "127.0.0.1",
		"[::1]:9092":       "::1",
		"[fe80::1%eth0]:1": "fe80::1%eth0",
		"10.0.0.1":         "10.0.0.1", // no port: as is
		"":                 "",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}
