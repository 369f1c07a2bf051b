package fuzz

import (
	"encoding/hex"

	"github.com/kiggy-io/kiggy/batch"
)

// Golden is the 70-byte RecordBatch test vector of docs/design/kafka-protocol.md §4.4.
var Golden = mustHex("0000000000000000" + "0000003a" + "ffffffff" + "02" + "bbcc4115" + "0000" + "00000000" +
	"0000018bcfe56800" + "0000018bcfe56800" + "ffffffffffffffff" + "ffff" + "ffffffff" + "00000001" +
	"1000000001046869" + "00")

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// BatchSeeds returns record batches for seeding fuzz targets: the golden
// vector, and for each codec a small batch built with batch.Builder holding
// null and empty keys and values, headers (one with a null value) and a
// record whose length varint takes two bytes.
func BatchSeeds() [][]byte {
	seeds := [][]byte{Golden}
	for _, codec := range []batch.Codec{batch.NoCompression, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd} {
		var b batch.Builder
		b.Reset(nil, 0, 1700000000000, codec)
		b.SetProducer(7, 0, 0)
		b.Append(0, 0, nil, []byte("v"))
		b.Append(1, 1, []byte{}, []byte{})
		b.BeginRecord(2, 2, []byte("k"), nil)
		b.AppendHeader([]byte("h"), []byte("x"))
		b.AppendHeader([]byte("n"), nil)
		b.Append(3, 3, []byte("long"), Text(3, 200))
		seeds = append(seeds, b.Finish())
	}
	return seeds
}

// CaptureBatches returns every record batch of every committed capture.
func CaptureBatches() ([][]byte, error) {
	caps, err := LoadCaptures(CapturesDir())
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, c := range caps {
		out = append(out, c.Batches...)
	}
	return out, nil
}
