package interop

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// filler makes values long enough for compression to matter.
const filler = " the quick brown fox jumps over the lazy dog, again and again and again"

// TestKcatProduce produces lines with kcat -P (librdkafka: Produce without
// idempotence, client-side timestamps) plain, with keys (-K:), with headers
// (-H, including null and empty values), and with each -z codec.
func TestKcatProduce(t *testing.T) {
	tg := newTarget(t)
	kcat := testtools.Kcat(t)

	kvHeaders := []string{"zeta=1", "alpha=two", "mid=3"}
	odd := []string{"zeta=1", "empty=", "null", "alpha=2"}
	for _, tc := range []struct {
		name    string
		codec   string // -z; "" = none given
		keys    bool   // -K:
		headers []string
	}{
		{name: "plain"},
		{name: "keys", keys: true},
		{name: "headers", headers: kvHeaders},
		{name: "null-and-empty-headers", headers: odd},
		{name: "none", codec: "none", keys: true, headers: kvHeaders},
		{name: "gzip", codec: "gzip", keys: true, headers: kvHeaders},
		{name: "snappy", codec: "snappy", keys: true, headers: kvHeaders},
		{name: "lz4", codec: "lz4", keys: true, headers: kvHeaders},
		{name: "zstd", codec: "zstd", keys: true, headers: kvHeaders},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := topicName(t)
			tg.CreateTopic(t, topic, 1)

			var hs []kiggytest.Header
			for _, h := range tc.headers {
				name, value, ok := strings.Cut(h, "=")
				if ok {
					hs = append(hs, kiggytest.Header{Key: name, Value: []byte(value)})
				} else {
					hs = append(hs, kiggytest.Header{Key: name}) // -H name: null value
				}
			}
			var in bytes.Buffer
			var want []kiggytest.Record
			for i := range 300 {
				key, value := kcatLine(i, tc.keys)
				if tc.keys {
					if key != nil {
						in.Write(key)
						in.WriteByte(':')
					}
				}
				in.Write(value)
				in.WriteByte('\n')
				want = append(want, kiggytest.Record{Key: key, Value: value, Headers: hs})
			}

			args := []string{"-P", "-b", tg.Addr(), "-t", topic, "-p", "0",
				"-X", "message.timeout.ms=30000", "-X", "socket.timeout.ms=30000"}
			if tc.keys {
				args = append(args, "-K:")
			}
			if tc.codec != "" {
				args = append(args, "-z", tc.codec)
			}
			for _, h := range tc.headers {
				args = append(args, "-H", h)
			}
			var r result
			win := window(func() { r = run(t, time.Minute, in.Bytes(), kcat, args...) })
			if r.code != 0 || strings.Contains(r.stderr, "Delivery failed") {
				t.Fatalf("kcat %s failed:\n%s", strings.Join(args, " "), r)
			}
			check(t, tg, topic, 0, want, &win)
		})
	}
}

// kcatLine returns line i's key and value as kcat -K: produces them: a line
// without the delimiter has a null key, ":v" an empty key, "k:" an empty
// value.
func kcatLine(i int, keys bool) (key, value []byte) {
	value = fmt.Appendf(nil, "value-%04d%s", i, filler)
	if !keys {
		return nil, value
	}
	switch i % 10 {
	case 0:
		return nil, value
	case 1:
		return []byte{}, value
	case 2:
		return fmt.Appendf(nil, "key-%04d", i), []byte{}
	default:
		return fmt.Appendf(nil, "key-%04d", i), value
	}
}
