package wire

// ErrorCounter receives the error codes a response carries, one call per
// element that holds a non-zero code.
//
// This mirrors Kafka's AbstractResponse.errorCounts, which feeds the broker's
// kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=…,error=… meter:
// every level of a response that has an error code (the response itself, a
// topic, partition, group, member, coordinator key or config resource) is
// counted once. Unlike Kafka, NONE is not reported: a response's request is
// counted elsewhere, so successes are requests minus errors.
//
// Each response's CountErrors is at the end of its codec's file;
// TestCountErrorsReportsEveryField checks that it reports every ErrorCode
// field. Produce and Fetch have no CountErrors: the gateway counts their partitions
// as it answers them (a Fetch response is streamed, never held whole).
type ErrorCounter interface {
	CountError(code ErrorCode)
}

// countError reports code to c when it is an error.
func countError(c ErrorCounter, code ErrorCode) {
	if code != NoError {
		c.CountError(code)
	}
}
