package batch

// DecompressForTest exposes the codec decoders to the external tests: it
// decompresses a records section with codec under limit bytes.
func DecompressForTest(d *Decoder, codec Codec, src []byte, limit int) ([]byte, error) {
	switch codec {
	case Gzip:
		return d.gunzip(src, limit)
	case Snappy:
		return d.unsnappy(src, limit)
	case LZ4:
		return d.unlz4(src, limit)
	case Zstd:
		return d.unzstd(src, limit)
	}
	return src, nil
}

// Checksum exposes the batch CRC-32C to the external tests.
var Checksum = checksum
