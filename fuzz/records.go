package fuzz

import "fmt"

// Header is one record header of ExpectedRecord.
type Header struct {
	Key   string
	Value []byte // nil = null
}

// ExpectedRecord is a record as a producer was asked to send it.
type ExpectedRecord struct {
	Key     []byte // nil = null
	Value   []byte // nil = null
	Headers []Header
}

// CaptureTopic is the topic the capture producers write to.
const CaptureTopic = "captures"

// GoClientRecords is the record set the Go clients (franz-go, sarama) produce
// for the captures, in order: null and empty keys and values, headers with
// null and empty values, values from 0 bytes to 100 KiB (larger than a 64 KiB
// LZ4 block and a 32 KiB xerial chunk), compressible and not.
func GoClientRecords() []ExpectedRecord {
	var recs []ExpectedRecord
	recs = append(recs,
		ExpectedRecord{Key: nil, Value: []byte("hello")},
		ExpectedRecord{Key: []byte{}, Value: []byte{}},
		ExpectedRecord{Key: []byte("tombstone"), Value: nil},
		ExpectedRecord{Key: []byte("headers"), Value: []byte("v"), Headers: []Header{
			{Key: "h1", Value: []byte("one")},
			{Key: "null", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: "", Value: []byte("empty key")},
		}},
	)
	for i := range 24 {
		recs = append(recs, ExpectedRecord{
			Key:   fmt.Appendf(nil, "key-%d", i),
			Value: Text(uint64(i), i*97),
		})
	}
	recs = append(recs,
		ExpectedRecord{Key: []byte("noise"), Value: Noise(7, 3000)},
		ExpectedRecord{Key: []byte("big"), Value: Text(99, 100<<10)},
	)
	return recs
}

// KcatLines are the "key\tvalue" lines fed to `kcat -P -K '\t'` for the kcat
// captures; each line becomes one record with that key and value.
func KcatLines() []string {
	lines := []string{"k0\thello", "k1\t", "k2\tworld"}
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("key-%d\t%s", i, Text(uint64(i), i*61)))
	}
	return lines
}

// Text returns n bytes of deterministic, compressible ASCII text.
func Text(seed uint64, n int) []byte {
	words := []string{"kafka ", "iggy ", "record ", "batch ", "stream ", "offset ", "gateway ", "zero ", "copy "}
	b := make([]byte, 0, n+8)
	x := seed*0x9E3779B97F4A7C15 + 1
	for len(b) < n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, words[x%uint64(len(words))]...)
	}
	return b[:n]
}

// Noise returns n bytes of deterministic, incompressible bytes.
func Noise(seed uint64, n int) []byte {
	b := make([]byte, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 32)
	}
	return b
}
