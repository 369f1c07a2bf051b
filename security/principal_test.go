package security

import "testing"

func TestParsePrincipal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Principal
		ok   bool
	}{
		{"User:alice", User("alice"), true},
		{"User:CN=a,O=b:c", Principal{"User", "CN=a,O=b:c"}, true},
		{"Group:ops", Principal{"Group", "ops"}, true},
		{"alice", Principal{}, false},
		{":alice", Principal{}, false},
		{"User:", Principal{}, false},
	} {
		got, err := ParsePrincipal(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePrincipal(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if tc.ok && got.String() != tc.in {
			t.Errorf("%q: String() = %q", tc.in, got.String())
		}
	}
	if Anonymous.String() != "User:ANONYMOUS" || !(Principal{}).IsZero() || Anonymous.IsZero() {
		t.Error("Anonymous / IsZero")
	}
}
