package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func admGenAlterConfigsRequest(g *oracleGen, _ int16) *kmsg.AlterConfigsRequest {
	r := kmsg.NewPtrAlterConfigsRequest()
	r.ValidateOnly = g.bool()
	r.UnknownTags = g.tags()
	for range g.n(true) {
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceType(g.i8())
		res.ResourceName = g.str()
		for range g.n(false) {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name = g.str()
			c.Value = g.ptr()
			c.UnknownTags = g.tags()
			res.Configs = append(res.Configs, c)
		}
		res.UnknownTags = g.tags()
		r.Resources = append(r.Resources, res)
	}
	return r
}

func admAlterConfigsRequestToKmsg(r *AlterConfigsRequest, v int16) *kmsg.AlterConfigsRequest {
	k := kmsg.NewPtrAlterConfigsRequest()
	k.Version = v
	k.ValidateOnly = r.ValidateOnly
	for _, res := range r.Resources {
		kr := kmsg.NewAlterConfigsRequestResource()
		kr.ResourceType = kmsg.ConfigResourceType(res.ResourceType)
		kr.ResourceName = res.ResourceName
		for _, c := range res.Configs {
			kc := kmsg.NewAlterConfigsRequestResourceConfig()
			kc.Name = c.Name
			kc.Value = ptrOf(c.Value)
			kr.Configs = append(kr.Configs, kc)
		}
		k.Resources = append(k.Resources, kr)
	}
	return k
}

func TestAlterConfigsRequestOracle(t *testing.T) {
	admRequestOracle(t, 33, alterConfigsMin, alterConfigsMax,
		admGenAlterConfigsRequest, (*AlterConfigsRequest).Decode, admAlterConfigsRequestToKmsg)
}

func admGenIncrementalAlterConfigsRequest(g *oracleGen, _ int16) *kmsg.IncrementalAlterConfigsRequest {
	r := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r.ValidateOnly = g.bool()
	r.UnknownTags = g.tags()
	for range g.n(true) {
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceType(g.i8())
		res.ResourceName = g.str()
		for range g.n(false) {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name = g.str()
			c.Op = kmsg.IncrementalAlterConfigOp(g.i8())
			c.Value = g.ptr()
			c.UnknownTags = g.tags()
			res.Configs = append(res.Configs, c)
		}
		res.UnknownTags = g.tags()
		r.Resources = append(r.Resources, res)
	}
	return r
}

func admIncrementalAlterConfigsRequestToKmsg(r *IncrementalAlterConfigsRequest, v int16) *kmsg.IncrementalAlterConfigsRequest {
	k := kmsg.NewPtrIncrementalAlterConfigsRequest()
	k.Version = v
	k.ValidateOnly = r.ValidateOnly
	for _, res := range r.Resources {
		kr := kmsg.NewIncrementalAlterConfigsRequestResource()
		kr.ResourceType = kmsg.ConfigResourceType(res.ResourceType)
		kr.ResourceName = res.ResourceName
		for _, c := range res.Configs {
			kc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			kc.Name = c.Name
			kc.Op = kmsg.IncrementalAlterConfigOp(c.Op)
			kc.Value = ptrOf(c.Value)
			kr.Configs = append(kr.Configs, kc)
		}
		k.Resources = append(k.Resources, kr)
	}
	return k
}

func TestIncrementalAlterConfigsRequestOracle(t *testing.T) {
	admRequestOracle(t, 44, incrementalAlterConfigsMin, incrementalAlterConfigsMax,
		admGenIncrementalAlterConfigsRequest, (*IncrementalAlterConfigsRequest).Decode, admIncrementalAlterConfigsRequestToKmsg)
}

func admGenAlterConfigsResults(g *oracleGen) []AlterConfigsResponseResource {
	var out []AlterConfigsResponseResource
	for range g.n(true) {
		out = append(out, AlterConfigsResponseResource{
			ErrorCode:    ErrorCode(g.i16()),
			ErrorMessage: g.ns(),
			ResourceType: ConfigResourceType(g.i8()),
			ResourceName: g.str(),
		})
	}
	return out
}

func TestAlterConfigsResponseOracle(t *testing.T) {
	gen := func(g *oracleGen, _ int16) *AlterConfigsResponse {
		return &AlterConfigsResponse{ThrottleMillis: g.i32(), Resources: admGenAlterConfigsResults(g)}
	}
	toKmsg := func(r *AlterConfigsResponse) *kmsg.AlterConfigsResponse {
		k := kmsg.NewPtrAlterConfigsResponse()
		k.ThrottleMillis = r.ThrottleMillis
		for _, res := range r.Resources {
			kr := kmsg.NewAlterConfigsResponseResource()
			kr.ErrorCode = int16(res.ErrorCode)
			kr.ErrorMessage = ptrOf(res.ErrorMessage)
			kr.ResourceType = kmsg.ConfigResourceType(res.ResourceType)
			kr.ResourceName = res.ResourceName
			k.Resources = append(k.Resources, kr)
		}
		return k
	}
	admResponseOracle(t, 1033, alterConfigsMin, alterConfigsMax, gen, (*AlterConfigsResponse).AppendTo, toKmsg)
}

func TestIncrementalAlterConfigsResponseOracle(t *testing.T) {
	gen := func(g *oracleGen, _ int16) *IncrementalAlterConfigsResponse {
		return &IncrementalAlterConfigsResponse{ThrottleMillis: g.i32(), Resources: admGenAlterConfigsResults(g)}
	}
	toKmsg := func(r *IncrementalAlterConfigsResponse) *kmsg.IncrementalAlterConfigsResponse {
		k := kmsg.NewPtrIncrementalAlterConfigsResponse()
		k.ThrottleMillis = r.ThrottleMillis
		for _, res := range r.Resources {
			kr := kmsg.NewIncrementalAlterConfigsResponseResource()
			kr.ErrorCode = int16(res.ErrorCode)
			kr.ErrorMessage = ptrOf(res.ErrorMessage)
			kr.ResourceType = kmsg.ConfigResourceType(res.ResourceType)
			kr.ResourceName = res.ResourceName
			k.Resources = append(k.Resources, kr)
		}
		return k
	}
	admResponseOracle(t, 1044, incrementalAlterConfigsMin, incrementalAlterConfigsMax,
		gen, (*IncrementalAlterConfigsResponse).AppendTo, toKmsg)
}
