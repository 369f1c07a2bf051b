package wire

// Shared helpers for the produce-side oracle tests (header, ApiVersions,
// Metadata, Produce, InitProducerId). franz-go's kmsg is the independent
// oracle (docs/design/style.md habit 8). Names carry a "prod" prefix so they cannot clash
// with the helpers of the other codec files in this package.

import (
	"bytes"
	"errors"
	"testing"
)

// prodNullableBytesEqual compares nullable byte fields: nil (null) differs
// from empty.
func prodNullableBytesEqual(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// prodCheckPrefixes decodes every strict prefix of body, and body plus a
// trailing byte, and requires an error each time: a short field must latch
// an error and Complete must reject leftovers. decode must not panic.
func prodCheckPrefixes(t *testing.T, body []byte, decode func([]byte) error) {
	t.Helper()
	for i := range body {
		if err := decode(body[:i:i]); err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded without error", i, len(body))
		}
	}
	long := append(append([]byte(nil), body...), 0)
	if err := decode(long); !errors.Is(err, ErrTrailing) {
		t.Fatalf("trailing byte: got %v, want ErrTrailing", err)
	}
}
