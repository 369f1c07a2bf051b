package batch

// Error is a batch validation or decoding failure. Code is the Kafka error
// code a broker answers for it in the partition's Produce response; Msg is a
// short package-prefixed description for logs. Every Error returned by this
// package is one of the sentinels below, so callers compare with == or
// errors.Is and nothing on the hot path allocates.
type Error struct {
	// Code is the Kafka protocol error code (docs/design/kafka-protocol.md §6).
	Code int16
	// Msg is the description returned by Error.
	Msg string
}

// Error returns e.Msg.
func (e *Error) Error() string { return e.Msg }

// Kafka error codes used by this package. They mirror wire.ErrorCode values;
// package batch does not import wire so that it stays independent.
const (
	codeCorruptMessage             int16 = 2
	codeMessageTooLarge            int16 = 10
	codeInvalidTimestamp           int16 = 32
	codeUnsupportedCompressionType int16 = 76
	codeInvalidRecord              int16 = 87
)

// Batch-level failures found by Validate (docs/design/kafka-protocol.md §4.6).
var (
	// ErrNoBatch: the records field is empty. Kafka (ProduceRequest.validateRecords):
	// "Produce requests with version N must have at least one record batch per
	// partition" → INVALID_RECORD.
	ErrNoBatch = &Error{codeInvalidRecord, "batch: records field holds no record batch"}

	// ErrMagic: the magic byte is not 2. Kafka (ProduceRequest.validateRecords):
	// "are only allowed to contain record batches with magic version 2" →
	// INVALID_RECORD. Checked before the size and CRC checks, as Kafka does, so
	// an old-format message set is never answered with the retriable
	// CORRUPT_MESSAGE.
	ErrMagic = &Error{codeInvalidRecord, "batch: magic is not 2"}

	// ErrTooShort: fewer than 61 bytes, or a batchLength below 49. Kafka
	// (DefaultRecordBatch.ensureValid): "Record batch is corrupt (the size N is
	// smaller than the minimum allowed overhead 61)" → CORRUPT_MESSAGE.
	ErrTooShort = &Error{codeCorruptMessage, "batch: shorter than the 61-byte batch header"}

	// ErrTruncated: batchLength declares more bytes than the records field
	// holds. Kafka's batch iterator stops at an incomplete batch, which then
	// fails the size/CRC checks → CORRUPT_MESSAGE.
	ErrTruncated = &Error{codeCorruptMessage, "batch: batchLength runs past the end of the records field"}

	// ErrTrailing: bytes follow the batch. Kafka (ProduceRequest.validateRecords):
	// "are only allowed to contain exactly one record batch per partition" →
	// INVALID_RECORD. (Kafka itself silently trims a trailing fragment shorter
	// than a batch header; kiggy rejects any trailing byte.)
	ErrTrailing = &Error{codeInvalidRecord, "batch: bytes after the batch (more than one batch)"}

	// ErrCRC: the CRC-32C over attributes..end does not match. Kafka
	// (UnifiedLog.analyzeAndValidateRecords): "Record is corrupt (stored crc =
	// N)" → CORRUPT_MESSAGE, which Java producers retry.
	ErrCRC = &Error{codeCorruptMessage, "batch: crc mismatch"}

	// ErrCodec: attributes name compression codec 5, 6 or 7. Kafka throws
	// IllegalArgumentException("Unknown compression type id: N") from
	// CompressionType.forId in UnifiedLog.analyzeAndValidateRecords; nothing
	// catches it but the catch-all, so Kafka answers UNKNOWN_SERVER_ERROR (-1).
	// kiggy answers the descriptive, non-retriable UNSUPPORTED_COMPRESSION_TYPE.
	ErrCodec = &Error{codeUnsupportedCompressionType, "batch: unknown compression codec"}

	// ErrCount: recordsCount is zero or negative. Kafka (LogValidator.validateBatch):
	// "Invalid reported count for record batch" → INVALID_RECORD.
	ErrCount = &Error{codeInvalidRecord, "batch: record count is not positive"}

	// ErrOffsetDelta: lastOffsetDelta+1 differs from recordsCount. Kafka
	// (LogValidator.validateBatch): "Inconsistent batch offset range [..] and
	// count of records N" → INVALID_RECORD.
	ErrOffsetDelta = &Error{codeInvalidRecord, "batch: lastOffsetDelta+1 does not match the record count"}
)

// Producer-side rules checked by Header.CheckProduce.
var (
	// ErrBaseOffset: a client batch whose baseOffset is not 0. Kafka
	// (UnifiedLog.analyzeAndValidateRecords): "The baseOffset of the record
	// batch in the append to TP should be 0" → INVALID_RECORD.
	ErrBaseOffset = &Error{codeInvalidRecord, "batch: producer batch baseOffset is not 0"}

	// ErrControl: a client wrote a control batch. Kafka
	// (LogValidator.validateBatch): "Clients are not allowed to write control
	// records" → INVALID_RECORD.
	ErrControl = &Error{codeInvalidRecord, "batch: clients may not write control batches"}

	// ErrSequence: producerId >= 0 but baseSequence < 0. Kafka
	// (LogValidator.validateBatch): "Invalid sequence number N in record batch
	// with producerId P" → INVALID_RECORD.
	ErrSequence = &Error{codeInvalidRecord, "batch: idempotent batch without a base sequence"}

	// ErrLogAppendTime: a client set the LogAppendTime attribute. Kafka
	// (LogValidator.validateTimestamp): "Invalid timestamp type in message ...
	// Producer should not set timestamp type to LogAppendTime" → INVALID_TIMESTAMP.
	ErrLogAppendTime = &Error{codeInvalidTimestamp, "batch: producer set the LogAppendTime attribute"}
)

// Record-level failures found while iterating (Kafka's DefaultRecord.readFrom
// and the DefaultRecordBatch iterators, all InvalidRecordException →
// INVALID_RECORD).
var (
	// ErrRecordLength: a record's length varint is malformed, negative, or runs
	// past the records section ("Invalid record size: expected N bytes in record
	// payload, but instead the buffer has only M remaining bytes").
	ErrRecordLength = &Error{codeInvalidRecord, "batch: record length is malformed or runs past the records"}

	// ErrRecordBody: a field inside a record is malformed (bad varint, a key or
	// value length below -1, a negative header count or header key length, a
	// field running past the record) or the fields do not add up to the
	// record's length ("Found invalid record structure", "Invalid record size:
	// expected to read N bytes in record payload, but instead read M").
	ErrRecordBody = &Error{codeInvalidRecord, "batch: record fields do not match the record length"}

	// ErrRecordCount: the records section ended before recordsCount records
	// ("Incorrect declared batch size, premature EOF reached").
	ErrRecordCount = &Error{codeInvalidRecord, "batch: fewer records than the record count"}

	// ErrRecordTrailing: bytes remain after recordsCount records ("Incorrect
	// declared batch size, records still remaining in file").
	ErrRecordTrailing = &Error{codeInvalidRecord, "batch: bytes after the last record"}
)

// Decoder failures.
var (
	// ErrDecompress: the compressed records cannot be decompressed. Kafka
	// wraps this in a KafkaException ("Failed to decompress record stream")
	// that reaches the catch-all as UNKNOWN_SERVER_ERROR; kiggy answers
	// INVALID_RECORD (non-retriable: the CRC already proved the bytes arrived
	// as the producer wrote them, so a retry cannot help).
	ErrDecompress = &Error{codeInvalidRecord, "batch: compressed records cannot be decompressed"}

	// ErrBudget: decompressing would exceed Budget.MaxBytes. Decoding stops at
	// the budget, never allocating past it. MESSAGE_TOO_LARGE, as Kafka
	// answers a batch above max.message.bytes (Java producers split a
	// multi-record batch and retry).
	ErrBudget = &Error{codeMessageTooLarge, "batch: decompressed records exceed the decode budget"}

	// ErrBudgetRecords: the batch holds more records than Budget.MaxRecords
	// allows. MESSAGE_TOO_LARGE.
	ErrBudgetRecords = &Error{codeMessageTooLarge, "batch: record count exceeds the decode budget"}

	// ErrCompressed: RecordsOf was given a compressed batch; use a Decoder.
	ErrCompressed = &Error{codeInvalidRecord, "batch: records are compressed; use a Decoder"}
)
