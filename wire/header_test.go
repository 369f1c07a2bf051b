package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceSideKeys are the table rows this file set owns.
var produceSideKeys = []APIKey{KeyProduce, KeyMetadata, KeyAPIVersions, KeyInitProducerID}

func TestProduceSideTableRows(t *testing.T) {
	want := map[APIKey]APIRange{
		KeyProduce:        {KeyProduce, 0, produceMaxVersion, 9},
		KeyMetadata:       {KeyMetadata, metadataMinVersion, metadataMaxVersion, 9},
		KeyAPIVersions:    {KeyAPIVersions, apiVersionsMinVersion, apiVersionsMaxVersion, 3},
		KeyInitProducerID: {KeyInitProducerID, initProducerIDMinVersion, initProducerIDMaxVersion, 2},
	}
	for key, w := range want {
		got, ok := LookupAPI(key)
		if !ok || got != w {
			t.Errorf("LookupAPI(%d) = %+v, %v; want %+v", key, got, ok, w)
		}
		// The table's flexible-from must agree with kmsg's schema.
		for v := w.Min; v <= w.Max; v++ {
			req := kmsg.RequestForKey(int16(key))
			req.SetVersion(v)
			if Flexible(key, v) != req.IsFlexible() {
				t.Errorf("Flexible(%d, %d) = %v, kmsg says %v", key, v, Flexible(key, v), req.IsFlexible())
			}
		}
	}
	for i := 1; i < len(APIs); i++ {
		if APIs[i-1].Key >= APIs[i].Key {
			t.Errorf("APIs not sorted by key at %d: %d then %d", i, APIs[i-1].Key, APIs[i].Key)
		}
	}
}

// TestParseRequestHeaderOracle parses kmsg-formatted frames (header v1 or v2
// chosen by kmsg from its own schema) for every version of every owned key,
// with a client id and with a null one.
func TestParseRequestHeaderOracle(t *testing.T) {
	formatters := []struct {
		f  *kmsg.RequestFormatter
		id NullString
	}{
		{kmsg.NewRequestFormatter(kmsg.FormatterClientID("producer-1")), NullStringOf("producer-1")},
		{kmsg.NewRequestFormatter(kmsg.FormatterClientID("")), NullStringOf("")},
		{kmsg.NewRequestFormatter(), NullString{}},
	}
	corr := int32(-7)
	for _, key := range produceSideKeys {
		a, _ := LookupAPI(key)
		for v := a.Min; v <= a.Max; v++ {
			for _, fm := range formatters {
				req := kmsg.RequestForKey(int16(key))
				req.SetVersion(v)
				frame := fm.f.AppendRequest(nil, req, corr)
				corr += 1000003
				h, body, err := ParseRequestHeader(frame[4:])
				if err != nil {
					t.Fatalf("key %d v%d: %v", key, v, err)
				}
				want := RequestHeader{APIKey: key, APIVersion: v, CorrelationID: corr - 1000003, ClientID: fm.id}
				if h != want {
					t.Fatalf("key %d v%d: got %+v want %+v", key, v, h, want)
				}
				if wantBody := req.AppendTo(nil); !bytes.Equal(body, wantBody) {
					t.Fatalf("key %d v%d: body %x want %x", key, v, body, wantBody)
				}
				// Our encoder produces the same header bytes.
				if got := AppendRequestHeader(nil, h); !bytes.Equal(got, frame[4:len(frame)-len(body)]) {
					t.Fatalf("key %d v%d: AppendRequestHeader %x want %x", key, v, got, frame[4:len(frame)-len(body)])
				}
			}
		}
	}
}

func TestParseRequestHeaderV2Tags(t *testing.T) {
	// Metadata v12 (flexible): header v2 with two tagged fields, one with a
	// two-byte tag number; the client id stays an INT16 string.
	frame := []byte{0, 3, 0, 12, 0, 0, 0, 42, 0, 3, 'c', 'l', 'i'}
	frame = append(frame, 2)
	frame = AppendTag(frame, 0, []byte("x"))
	frame = AppendTag(frame, 300, bytes.Repeat([]byte{7}, 129))
	bodyStart := len(frame)
	frame = append(frame, 1, 0, 0) // Metadata v12: empty topics, flags
	h, body, err := ParseRequestHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	if h.APIKey != KeyMetadata || h.APIVersion != 12 || h.CorrelationID != 42 || h.ClientID != NullStringOf("cli") {
		t.Fatalf("header %+v", h)
	}
	if !bytes.Equal(body, frame[bodyStart:]) {
		t.Fatalf("body %x", body)
	}
	// A truncated tag section is an error, not a body.
	if _, _, err := ParseRequestHeader(frame[:bodyStart-5]); !errors.Is(err, ErrShort) {
		t.Fatalf("truncated tags: %v", err)
	}
}

func TestParseRequestHeaderUnsupported(t *testing.T) {
	mk := func(key, version int16) []byte {
		b := AppendInt16(nil, key)
		b = AppendInt16(b, version)
		b = AppendInt32(b, 99)
		b = AppendString(b, "c")
		return append(b, 0, 0) // tags (if flexible) and a byte of body
	}
	for _, tc := range []struct {
		key, version int16
		err          error
	}{
		{int16(KeyProduce), 14, ErrUnsupportedVersion},
		{int16(KeyProduce), -1, ErrUnsupportedVersion},
		{int16(KeyMetadata), 14, ErrUnsupportedVersion},
		{int16(KeyInitProducerID), 6, ErrUnsupportedVersion},
		{int16(KeyAPIVersions), -1, ErrUnsupportedVersion},
		{-1, 0, ErrUnsupportedVersion},
		{127, 0, ErrUnsupportedVersion},
		{128, 0, ErrUnsupportedVersion},
		{32767, 0, ErrUnsupportedVersion},
		{-32768, 0, ErrUnsupportedVersion},
		// KIP-511: any ApiVersions version parses, header v2 from v3 on.
		{int16(KeyAPIVersions), 5, nil},
		{int16(KeyAPIVersions), 32767, nil},
		{int16(KeyProduce), 0, nil}, // advertised; the body decoder rejects it
	} {
		h, body, err := ParseRequestHeader(mk(tc.key, tc.version))
		if err != tc.err {
			t.Errorf("key %d v%d: err %v, want %v", tc.key, tc.version, err, tc.err)
		}
		if h.APIKey != APIKey(tc.key) || h.APIVersion != tc.version || h.CorrelationID != 99 {
			t.Errorf("key %d v%d: header %+v", tc.key, tc.version, h)
		}
		if tc.err != nil {
			if body != nil || h.ClientID.Valid {
				t.Errorf("key %d v%d: body %x client id %+v with error", tc.key, tc.version, body, h.ClientID)
			}
			continue
		}
		wantBody := []byte{0, 0}
		if tc.key == int16(KeyAPIVersions) {
			wantBody = []byte{0} // the first 0 was the header tag count
		}
		if h.ClientID != NullStringOf("c") || !bytes.Equal(body, wantBody) {
			t.Errorf("key %d v%d: client id %+v body %x", tc.key, tc.version, h.ClientID, body)
		}
	}
}

func TestParseRequestHeaderShort(t *testing.T) {
	frame := AppendRequestHeader(nil, RequestHeader{APIKey: KeyProduce, APIVersion: 9, CorrelationID: 1, ClientID: NullStringOf("abc")})
	for i := range frame {
		if _, _, err := ParseRequestHeader(frame[:i:i]); !errors.Is(err, ErrShort) {
			t.Fatalf("prefix %d: %v", i, err)
		}
	}
	// A client id length past the end.
	bad := []byte{0, 0, 0, 3, 0, 0, 0, 1, 0x7f, 0xff, 'a'}
	if _, _, err := ParseRequestHeader(bad); !errors.Is(err, ErrShort) {
		t.Fatalf("long client id: %v", err)
	}
	// A null client id (-1) and any other negative length read as null,
	// like Java's readNullableString.
	for _, n := range []int16{-1, -2, -32768} {
		f := AppendInt16([]byte{0, 0, 0, 3, 0, 0, 0, 1}, n)
		h, body, err := ParseRequestHeader(f)
		if err != nil || h.ClientID.Valid || len(body) != 0 {
			t.Fatalf("client id length %d: %+v %x %v", n, h, body, err)
		}
	}
}

// TestParseRequestHeaderView checks the client id and body alias the frame.
func TestParseRequestHeaderView(t *testing.T) {
	frame := AppendRequestHeader(nil, RequestHeader{APIKey: KeyMetadata, APIVersion: 1, ClientID: NullStringOf("abc")})
	frame = append(frame, 0xff, 0xff, 0xff, 0xff)
	h, body, err := ParseRequestHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	copy(frame[10:], "xyz")
	body[0] = 0
	if h.ClientID.S != "xyz" || frame[13] != 0 {
		t.Fatalf("not views: client id %q, frame %x", h.ClientID.S, frame)
	}
	if cap(body) != len(body) {
		t.Fatalf("body capacity %d exceeds its length %d", cap(body), len(body))
	}
}

func TestAppendResponseHeader(t *testing.T) {
	for _, tc := range []struct {
		key     APIKey
		version int16
		want    string
	}{
		{KeyProduce, 8, "fffffffe"},
		{KeyProduce, 9, "fffffffe00"},
		{KeyProduce, 12, "fffffffe00"},
		{KeyMetadata, 8, "fffffffe"},
		{KeyMetadata, 13, "fffffffe00"},
		{KeyInitProducerID, 1, "fffffffe"},
		{KeyInitProducerID, 2, "fffffffe00"},
		// "ApiVersions responses always use response header v0".
		{KeyAPIVersions, 0, "fffffffe"},
		{KeyAPIVersions, 3, "fffffffe"},
		{KeyAPIVersions, 4, "fffffffe"},
		{KeyAPIVersions, 9, "fffffffe"},
		{APIKey(127), 50, "fffffffe"},
	} {
		got := AppendResponseHeader([]byte{0xaa}, tc.key, tc.version, -2)
		if hex.EncodeToString(got) != "aa"+tc.want {
			t.Errorf("key %d v%d: %x, want aa%s", tc.key, tc.version, got, tc.want)
		}
	}
}

func FuzzRequestHeader(f *testing.F) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, key := range produceSideKeys {
		a, _ := LookupAPI(key)
		for v := a.Min; v <= a.Max+1; v++ {
			req := kmsg.RequestForKey(int16(key))
			req.SetVersion(v)
			f.Add(fm.AppendRequest(nil, req, 5)[4:])
		}
	}
	f.Add([]byte{0, 18, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 3, 1, 1, 'a', 2, 0, 0x80})
	f.Add(prodReadHex(f, "testdata/golden/apiversions_v4_request.hex")[4:]) // Java 4.0 capture
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := ParseRequestHeader(frame)
		if err != nil {
			if body != nil {
				t.Fatalf("body %x with error %v", body, err)
			}
			return
		}
		a, ok := LookupAPI(h.APIKey)
		if !ok || h.APIVersion < a.Min || (h.APIVersion > a.Max && h.APIKey != KeyAPIVersions) {
			t.Fatalf("accepted %+v outside the table", h)
		}
		if !bytes.HasSuffix(frame, body) || len(frame)-len(body) < 10 {
			t.Fatalf("body %x is not a tail of frame %x", body, frame)
		}
		// Re-encoding the header (without any tags it carried) and
		// re-parsing gives the same header and body.
		again := append(AppendRequestHeader(nil, h), body...)
		h2, body2, err := ParseRequestHeader(again)
		if err != nil || h2 != h || !bytes.Equal(body2, body) {
			t.Fatalf("round trip: %+v %x %v, want %+v %x", h2, body2, err, h, body)
		}
	})
}
