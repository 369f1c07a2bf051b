package iggytest

import (
	"os"
	"testing"
)

// TestMain runs the server's own tests with both dialects whatever the
// suite's KIGGY_IGGY_PROTOCOL: they log in as the official 0.9 client does.
func TestMain(m *testing.M) {
	os.Unsetenv(DialectEnv)
	os.Exit(m.Run())
}
