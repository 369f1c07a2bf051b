package wire

import (
	"sync"
	"testing"
)

// admFuzzAPI is one admin request decoder under FuzzAdminRequests.
type admFuzzAPI struct {
	name   string
	lo, hi int16
	// check decodes body at version v and, when we accept it, requires kmsg
	// to accept it too and to read the same values.
	check func(t *testing.T, body []byte, v int16)
	// seed returns a kmsg-encoded request at version v.
	seed func(g *oracleGen, v int16) []byte
}

// admFuzzCheck builds an admFuzzAPI check from a decoder and its kmsg
// converter. Besides a fresh struct, each input is also decoded into one
// primed with a rich seed request (reuse must not leak old contents).
func admFuzzCheck[T any, P interface {
	*T
	admMsg
}, R any](decode func(*R, []byte, int16) error, toKmsg func(*R, int16) P, gen func(*oracleGen, int16) P) func(*testing.T, []byte, int16) {
	var mu sync.Mutex
	richBodies := map[int16][]byte{}
	rich := func(v int16) []byte {
		mu.Lock()
		defer mu.Unlock()
		b, ok := richBodies[v]
		if !ok {
			r := gen(newOracleGen(uint64(v)), v)
			r.SetVersion(v)
			b = r.AppendTo(nil)
			richBodies[v] = b
		}
		return b
	}
	return func(t *testing.T, body []byte, v int16) {
		var fresh R
		err := decode(&fresh, body, v)

		var primed R
		_ = decode(&primed, rich(v), v)
		errReused := decode(&primed, body, v)
		if (err == nil) != (errReused == nil) {
			t.Fatalf("v%d: fresh decode error %v, reused decode error %v", v, err, errReused)
		}
		if err != nil {
			return
		}
		want, kerr := admKmsgDecode[T, P](body, v)
		if kerr != nil {
			t.Fatalf("v%d: we accept a body kmsg rejects (%v): %x", v, kerr, body)
		}
		admCheckEqual(t, "fresh decode vs kmsg", toKmsg(&fresh, v), want)
		admCheckEqual(t, "reused decode vs kmsg", toKmsg(&primed, v), want)
	}
}

// admSeed returns a seed function encoding gen's request with kmsg.
func admSeed[P interface{ admMsg }](gen func(*oracleGen, int16) P) func(*oracleGen, int16) []byte {
	return func(g *oracleGen, v int16) []byte {
		r := gen(g, v)
		r.SetVersion(v)
		return r.AppendTo(nil)
	}
}

var admFuzzAPIs = []admFuzzAPI{
	{"CreateTopics", createTopicsMin, createTopicsMax,
		admFuzzCheck((*CreateTopicsRequest).Decode, admCreateTopicsRequestToKmsg, admGenCreateTopicsRequest),
		admSeed(admGenCreateTopicsRequest)},
	{"DeleteTopics", deleteTopicsMin, deleteTopicsMax,
		admFuzzCheck((*DeleteTopicsRequest).Decode, admDeleteTopicsRequestToKmsg, admGenDeleteTopicsRequest),
		admSeed(admGenDeleteTopicsRequest)},
	{"CreatePartitions", createPartitionsMin, createPartitionsMax,
		admFuzzCheck((*CreatePartitionsRequest).Decode, admCreatePartitionsRequestToKmsg, admGenCreatePartitionsRequest),
		admSeed(admGenCreatePartitionsRequest)},
	{"DescribeConfigs", describeConfigsMin, describeConfigsMax,
		admFuzzCheck((*DescribeConfigsRequest).Decode, admDescribeConfigsRequestToKmsg, admGenDescribeConfigsRequest),
		admSeed(admGenDescribeConfigsRequest)},
	{"AlterConfigs", alterConfigsMin, alterConfigsMax,
		admFuzzCheck((*AlterConfigsRequest).Decode, admAlterConfigsRequestToKmsg, admGenAlterConfigsRequest),
		admSeed(admGenAlterConfigsRequest)},
	{"IncrementalAlterConfigs", incrementalAlterConfigsMin, incrementalAlterConfigsMax,
		admFuzzCheck((*IncrementalAlterConfigsRequest).Decode, admIncrementalAlterConfigsRequestToKmsg, admGenIncrementalAlterConfigsRequest),
		admSeed(admGenIncrementalAlterConfigsRequest)},
	{"DescribeCluster", describeClusterMin, describeClusterMax,
		admFuzzCheck((*DescribeClusterRequest).Decode, admDescribeClusterRequestToKmsg, admGenDescribeClusterRequest),
		admSeed(admGenDescribeClusterRequest)},
	{"DescribeAcls", aclsMin, aclsMax,
		admFuzzCheck((*DescribeAclsRequest).Decode, admDescribeAclsRequestToKmsg, admGenDescribeAclsRequest),
		admSeed(admGenDescribeAclsRequest)},
	{"CreateAcls", aclsMin, aclsMax,
		admFuzzCheck((*CreateAclsRequest).Decode, admCreateAclsRequestToKmsg, admGenCreateAclsRequest),
		admSeed(admGenCreateAclsRequest)},
	{"DeleteAcls", aclsMin, aclsMax,
		admFuzzCheck((*DeleteAclsRequest).Decode, admDeleteAclsRequestToKmsg, admGenDeleteAclsRequest),
		admSeed(admGenDeleteAclsRequest)},
	{"DescribeLogDirs", describeLogDirsMin, describeLogDirsMax,
		admFuzzCheck((*DescribeLogDirsRequest).Decode, admDescribeLogDirsRequestToKmsg, admGenDescribeLogDirsRequest),
		admSeed(admGenDescribeLogDirsRequest)},
	{"ElectLeaders", electLeadersMin, electLeadersMax,
		admFuzzCheck((*ElectLeadersRequest).Decode, admElectLeadersRequestToKmsg, admGenElectLeadersRequest),
		admSeed(admGenElectLeadersRequest)},
	{"AlterPartitionReassignments", alterReassignmentsMin, alterReassignmentsMax,
		admFuzzCheck((*AlterPartitionReassignmentsRequest).Decode, admAlterReassignmentsRequestToKmsg, admGenAlterReassignmentsRequest),
		admSeed(admGenAlterReassignmentsRequest)},
	{"ListPartitionReassignments", listReassignmentsMin, listReassignmentsMax,
		admFuzzCheck((*ListPartitionReassignmentsRequest).Decode, admListReassignmentsRequestToKmsg, admGenListReassignmentsRequest),
		admSeed(admGenListReassignmentsRequest)},
	{"DescribeProducers", describeProducersMin, describeProducersMax,
		admFuzzCheck((*DescribeProducersRequest).Decode, admDescribeProducersRequestToKmsg, admGenDescribeProducersRequest),
		admSeed(admGenDescribeProducersRequest)},
	{"DescribeTopicPartitions", describeTopicPartitionsMin, describeTopicPartitionsMax,
		admFuzzCheck((*DescribeTopicPartitionsRequest).Decode, admDescribeTopicPartitionsRequestToKmsg, admGenDescribeTopicPartitionsRequest),
		admSeed(admGenDescribeTopicPartitionsRequest)},
}

// admFuzzVersion maps a fuzz byte to a version in [lo, hi+1]: hi+1 checks
// that unimplemented versions are refused.
func admFuzzVersion(a *admFuzzAPI, b byte) int16 {
	return a.lo + int16(b)%(a.hi-a.lo+2)
}

// admFuzzMaxLen bounds fuzz inputs.
const admFuzzMaxLen = 2048

// FuzzAdminRequests feeds every admin request decoder. Input: one byte
// selecting the API, one selecting the version, then the body. Decoders must
// never panic, and whatever they accept kmsg must accept and read the same.
// Seeds are kmsg-encoded requests of every API and version.
func FuzzAdminRequests(f *testing.F) {
	g := newOracleGen(0xf022)
	g.small = true
	for i := range admFuzzAPIs {
		a := &admFuzzAPIs[i]
		for v := a.lo; v <= a.hi; v++ {
			for added := 0; added < 2; {
				if in := append([]byte{byte(i), byte(v - a.lo)}, a.seed(g, v)...); len(in) <= admFuzzMaxLen {
					f.Add(in)
					added++
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Longer inputs only slow the fuzzer down (minimizing them takes
		// minutes); the oracle tests cover long arrays and strings.
		if len(data) < 2 || len(data) > admFuzzMaxLen {
			return
		}
		a := &admFuzzAPIs[int(data[0])%len(admFuzzAPIs)]
		a.check(t, data[2:], admFuzzVersion(a, data[1]))
	})
}
