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
// Produce and Fetch have no CountErrors: the gateway counts their partitions
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

// CountErrors reports r's error codes to c.
func (r *APIVersionsResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *MetadataResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Topics {
		t := &r.Topics[i]
		countError(c, t.ErrorCode)
		for j := range t.Partitions {
			countError(c, t.Partitions[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error codes to c.
func (r *InitProducerIDResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *ListOffsetsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error codes to c.
func (r *OffsetForLeaderEpochResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error codes to c.
func (r *FindCoordinatorResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Coordinators {
		countError(c, r.Coordinators[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *JoinGroupResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *SyncGroupResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *HeartbeatResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *LeaveGroupResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Members {
		countError(c, r.Members[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *OffsetCommitResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error codes to c.
func (r *OffsetFetchResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	countOffsetFetchTopics(c, r.Topics)
	for i := range r.Groups {
		countError(c, r.Groups[i].ErrorCode)
		countOffsetFetchTopics(c, r.Groups[i].Topics)
	}
}

func countOffsetFetchTopics(c ErrorCounter, topics []OffsetFetchResponseTopic) {
	for i := range topics {
		for j := range topics[i].Partitions {
			countError(c, topics[i].Partitions[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error codes to c.
func (r *DescribeGroupsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Groups {
		countError(c, r.Groups[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *ListGroupsResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *DeleteGroupsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Results {
		countError(c, r.Results[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *OffsetDeleteResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error codes to c.
func (r *DeleteRecordsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error codes to c.
func (r *CreateTopicsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		countError(c, r.Topics[i].ErrorCode)
		countError(c, r.Topics[i].ConfigErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *DeleteTopicsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		countError(c, r.Topics[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *CreatePartitionsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		countError(c, r.Topics[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *DescribeConfigsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Resources {
		countError(c, r.Resources[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *AlterConfigsResponse) CountErrors(c ErrorCounter) {
	countAlterResources(c, r.Resources)
}

// CountErrors reports r's error codes to c.
func (r *IncrementalAlterConfigsResponse) CountErrors(c ErrorCounter) {
	countAlterResources(c, r.Resources)
}

func countAlterResources(c ErrorCounter, rs []AlterConfigsResponseResource) {
	for i := range rs {
		countError(c, rs[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *DescribeClusterResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *DescribeProducersResponse) CountErrors(c ErrorCounter) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			countError(c, r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error codes to c.
func (r *DescribeAclsResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *CreateAclsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Results {
		countError(c, r.Results[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *DeleteAclsResponse) CountErrors(c ErrorCounter) {
	for i := range r.FilterResults {
		fr := &r.FilterResults[i]
		countError(c, fr.ErrorCode)
		for j := range fr.MatchingACLs {
			countError(c, fr.MatchingACLs[j].ErrorCode)
		}
	}
}

// CountErrors reports r's error code to c.
func (r *SaslHandshakeResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error code to c.
func (r *SaslAuthenticateResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }

// CountErrors reports r's error codes to c.
func (r *DescribeUserScramCredentialsResponse) CountErrors(c ErrorCounter) {
	countError(c, r.ErrorCode)
	for i := range r.Results {
		countError(c, r.Results[i].ErrorCode)
	}
}

// CountErrors reports r's error codes to c.
func (r *AlterUserScramCredentialsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Results {
		countError(c, r.Results[i].ErrorCode)
	}
}

// CountErrors reports r's error code to c.
func (r *DescribeClientQuotasResponse) CountErrors(c ErrorCounter) { countError(c, r.ErrorCode) }
