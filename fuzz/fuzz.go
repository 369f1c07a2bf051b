// Package fuzz holds what kiggy's fuzz targets and golden tests share: the
// real-client capture files (their format, where they live, how to read the
// record batches out of them), the record set the Go clients produce for
// those captures, and seed builders for RecordBatch inputs. The Fuzz*
// targets themselves live beside the code they exercise. See README.md.
//
// This package is imported by tests only.
package fuzz

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// CapturesDir returns the directory holding the real-client captures,
// batch/testdata/captures in the repository.
func CapturesDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("batch", "testdata", "captures")
	}
	return filepath.Join(filepath.Dir(file), "..", "batch", "testdata", "captures")
}

// Capture is one capture file: the Produce requests one client sent for one
// codec, as size-prefixed Kafka frames exactly as they arrived.
type Capture struct {
	// Name is the file name without ".bin", "<client>-<codec>".
	Name string
	// Client and Codec are Name split at the last '-'.
	Client, Codec string
	// Frames are the request frames without their 4-byte size prefix.
	Frames [][]byte
	// Batches are the records fields of every partition of every Produce
	// request, in order: each is what batch.Validate takes.
	Batches [][]byte
}

// LoadCaptures reads every *.bin file in dir (see CapturesDir).
func LoadCaptures(dir string) ([]Capture, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.bin"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []Capture
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		c := Capture{Name: strings.TrimSuffix(filepath.Base(name), ".bin")}
		if i := strings.LastIndexByte(c.Name, '-'); i > 0 {
			c.Client, c.Codec = c.Name[:i], c.Name[i+1:]
		}
		if c.Frames, err = Frames(b); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, f := range c.Frames {
			batches, err := ProduceRecords(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			c.Batches = append(c.Batches, batches...)
		}
		out = append(out, c)
	}
	return out, nil
}

// AppendFrame appends frame with its 4-byte big-endian size prefix, the
// capture file format.
func AppendFrame(dst, frame []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(frame)))
	return append(dst, frame...)
}

// Frames splits a capture file (a sequence of size-prefixed Kafka frames)
// into the frames, without their size prefixes.
func Frames(stream []byte) ([][]byte, error) {
	var frames [][]byte
	for len(stream) > 0 {
		if len(stream) < 4 {
			return nil, errors.New("fuzz: truncated frame size")
		}
		n := binary.BigEndian.Uint32(stream)
		if uint64(n) > uint64(len(stream)-4) {
			return nil, errors.New("fuzz: truncated frame")
		}
		frames = append(frames, stream[4:4+n:4+n])
		stream = stream[4+n:]
	}
	return frames, nil
}

// RequestHeader is a parsed Kafka request header (v1 or v2).
type RequestHeader struct {
	Key, Version  int16
	CorrelationID int32
	ClientID      string
}

// ParseRequest splits a request frame (without its size prefix) into its
// header and body, choosing header v2 for flexible versions as Kafka does
// (docs/design/kafka-protocol.md §1.4). It is a test helper built on kmsg's version
// table, not kiggy's parser.
func ParseRequest(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < 10 {
		return h, nil, errors.New("fuzz: short request header")
	}
	h.Key = int16(binary.BigEndian.Uint16(frame))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	n := int(int16(binary.BigEndian.Uint16(frame[8:])))
	rest := frame[10:]
	if n > 0 {
		if n > len(rest) {
			return h, nil, errors.New("fuzz: short client id")
		}
		h.ClientID, rest = string(rest[:n]), rest[n:]
	}
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return h, nil, fmt.Errorf("fuzz: unknown api key %d", h.Key)
	}
	req.SetVersion(h.Version)
	if req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errors.New("fuzz: bad tag count")
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, errors.New("fuzz: bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errors.New("fuzz: bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// ProduceRecords returns the records field of every partition of a Produce
// request frame (decoded with kmsg, the test oracle). Frames of other APIs
// yield nothing.
func ProduceRecords(frame []byte) ([][]byte, error) {
	h, body, err := ParseRequest(frame)
	if err != nil {
		return nil, err
	}
	if h.Key != 0 {
		return nil, nil
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = h.Version
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("fuzz: produce v%d: %w", h.Version, err)
	}
	var out [][]byte
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.Records)
		}
	}
	return out, nil
}
