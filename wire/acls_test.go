package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The oracle tests of the ACL APIs (29, 30, 31) against kmsg, for every
// version served (docs/design/style.md habit 8).

func admGenDescribeAclsRequest(g *oracleGen, _ int16) *kmsg.DescribeACLsRequest {
	r := kmsg.NewPtrDescribeACLsRequest()
	r.ResourceType = kmsg.ACLResourceType(g.i8())
	r.ResourceName = g.ptr()
	r.ResourcePatternType = kmsg.ACLResourcePatternType(g.i8())
	r.Principal = g.ptr()
	r.Host = g.ptr()
	r.Operation = kmsg.ACLOperation(g.i8())
	r.PermissionType = kmsg.ACLPermissionType(g.i8())
	r.UnknownTags = g.tags()
	return r
}

func admDescribeAclsRequestToKmsg(r *DescribeAclsRequest, v int16) *kmsg.DescribeACLsRequest {
	k := kmsg.NewPtrDescribeACLsRequest()
	k.Version = v
	f := &r.Filter
	k.ResourceType = kmsg.ACLResourceType(f.ResourceType)
	k.ResourceName = ptrOf(f.ResourceName)
	k.ResourcePatternType = kmsg.ACLResourcePatternType(f.PatternType)
	k.Principal = ptrOf(f.Principal)
	k.Host = ptrOf(f.Host)
	k.Operation = kmsg.ACLOperation(f.Operation)
	k.PermissionType = kmsg.ACLPermissionType(f.Permission)
	return k
}

func TestDescribeAclsRequestOracle(t *testing.T) {
	admRequestOracle(t, 29, aclsMin, aclsMax,
		admGenDescribeAclsRequest, (*DescribeAclsRequest).Decode, admDescribeAclsRequestToKmsg)
}

func admGenDescribeAclsResponse(g *oracleGen, _ int16) *DescribeAclsResponse {
	r := &DescribeAclsResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), ErrorMessage: g.ns()}
	for range g.n(true) {
		res := DescribeAclsResource{ResourceType: g.i8(), ResourceName: g.str(), PatternType: g.i8()}
		for range g.n(true) {
			res.ACLs = append(res.ACLs, ACLDescription{Principal: g.str(), Host: g.str(), Operation: g.i8(), Permission: g.i8()})
		}
		r.Resources = append(r.Resources, res)
	}
	return r
}

func admDescribeAclsResponseToKmsg(r *DescribeAclsResponse) *kmsg.DescribeACLsResponse {
	k := kmsg.NewPtrDescribeACLsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	k.ErrorCode = int16(r.ErrorCode)
	k.ErrorMessage = ptrOf(r.ErrorMessage)
	for _, res := range r.Resources {
		kr := kmsg.NewDescribeACLsResponseResource()
		kr.ResourceType = kmsg.ACLResourceType(res.ResourceType)
		kr.ResourceName = res.ResourceName
		kr.ResourcePatternType = kmsg.ACLResourcePatternType(res.PatternType)
		for _, a := range res.ACLs {
			ka := kmsg.NewDescribeACLsResponseResourceACL()
			ka.Principal, ka.Host = a.Principal, a.Host
			ka.Operation = kmsg.ACLOperation(a.Operation)
			ka.PermissionType = kmsg.ACLPermissionType(a.Permission)
			kr.ACLs = append(kr.ACLs, ka)
		}
		k.Resources = append(k.Resources, kr)
	}
	return k
}

func TestDescribeAclsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1029, aclsMin, aclsMax,
		admGenDescribeAclsResponse, (*DescribeAclsResponse).AppendTo, admDescribeAclsResponseToKmsg)
}

func admGenCreateAclsRequest(g *oracleGen, _ int16) *kmsg.CreateACLsRequest {
	r := kmsg.NewPtrCreateACLsRequest()
	for range g.n(true) {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType = kmsg.ACLResourceType(g.i8())
		c.ResourceName = g.str()
		c.ResourcePatternType = kmsg.ACLResourcePatternType(g.i8())
		c.Principal = g.str()
		c.Host = g.str()
		c.Operation = kmsg.ACLOperation(g.i8())
		c.PermissionType = kmsg.ACLPermissionType(g.i8())
		c.UnknownTags = g.tags()
		r.Creations = append(r.Creations, c)
	}
	r.UnknownTags = g.tags()
	return r
}

func admCreateAclsRequestToKmsg(r *CreateAclsRequest, v int16) *kmsg.CreateACLsRequest {
	k := kmsg.NewPtrCreateACLsRequest()
	k.Version = v
	for _, c := range r.Creations {
		kc := kmsg.NewCreateACLsRequestCreation()
		kc.ResourceType = kmsg.ACLResourceType(c.ResourceType)
		kc.ResourceName = c.ResourceName
		kc.ResourcePatternType = kmsg.ACLResourcePatternType(c.PatternType)
		kc.Principal, kc.Host = c.Principal, c.Host
		kc.Operation = kmsg.ACLOperation(c.Operation)
		kc.PermissionType = kmsg.ACLPermissionType(c.Permission)
		k.Creations = append(k.Creations, kc)
	}
	return k
}

func TestCreateAclsRequestOracle(t *testing.T) {
	admRequestOracle(t, 30, aclsMin, aclsMax,
		admGenCreateAclsRequest, (*CreateAclsRequest).Decode, admCreateAclsRequestToKmsg)
}

func admGenCreateAclsResponse(g *oracleGen, _ int16) *CreateAclsResponse {
	r := &CreateAclsResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		r.Results = append(r.Results, ACLResult{ErrorCode: g.code(), ErrorMessage: g.ns()})
	}
	return r
}

func admCreateAclsResponseToKmsg(r *CreateAclsResponse) *kmsg.CreateACLsResponse {
	k := kmsg.NewPtrCreateACLsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, res := range r.Results {
		kr := kmsg.NewCreateACLsResponseResult()
		kr.ErrorCode = int16(res.ErrorCode)
		kr.ErrorMessage = ptrOf(res.ErrorMessage)
		k.Results = append(k.Results, kr)
	}
	return k
}

func TestCreateAclsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1030, aclsMin, aclsMax,
		admGenCreateAclsResponse, (*CreateAclsResponse).AppendTo, admCreateAclsResponseToKmsg)
}

func admGenDeleteAclsRequest(g *oracleGen, _ int16) *kmsg.DeleteACLsRequest {
	r := kmsg.NewPtrDeleteACLsRequest()
	for range g.n(true) {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType = kmsg.ACLResourceType(g.i8())
		f.ResourceName = g.ptr()
		f.ResourcePatternType = kmsg.ACLResourcePatternType(g.i8())
		f.Principal = g.ptr()
		f.Host = g.ptr()
		f.Operation = kmsg.ACLOperation(g.i8())
		f.PermissionType = kmsg.ACLPermissionType(g.i8())
		f.UnknownTags = g.tags()
		r.Filters = append(r.Filters, f)
	}
	r.UnknownTags = g.tags()
	return r
}

func admDeleteAclsRequestToKmsg(r *DeleteAclsRequest, v int16) *kmsg.DeleteACLsRequest {
	k := kmsg.NewPtrDeleteACLsRequest()
	k.Version = v
	for _, f := range r.Filters {
		kf := kmsg.NewDeleteACLsRequestFilter()
		kf.ResourceType = kmsg.ACLResourceType(f.ResourceType)
		kf.ResourceName = ptrOf(f.ResourceName)
		kf.ResourcePatternType = kmsg.ACLResourcePatternType(f.PatternType)
		kf.Principal = ptrOf(f.Principal)
		kf.Host = ptrOf(f.Host)
		kf.Operation = kmsg.ACLOperation(f.Operation)
		kf.PermissionType = kmsg.ACLPermissionType(f.Permission)
		k.Filters = append(k.Filters, kf)
	}
	return k
}

func TestDeleteAclsRequestOracle(t *testing.T) {
	admRequestOracle(t, 31, aclsMin, aclsMax,
		admGenDeleteAclsRequest, (*DeleteAclsRequest).Decode, admDeleteAclsRequestToKmsg)
}

func admGenDeleteAclsResponse(g *oracleGen, _ int16) *DeleteAclsResponse {
	r := &DeleteAclsResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		fr := DeleteAclsFilterResult{ErrorCode: g.code(), ErrorMessage: g.ns()}
		for range g.n(true) {
			fr.MatchingACLs = append(fr.MatchingACLs, DeleteAclsMatchingACL{
				ErrorCode: g.code(), ErrorMessage: g.ns(), ResourceType: g.i8(), ResourceName: g.str(),
				PatternType: g.i8(), Principal: g.str(), Host: g.str(), Operation: g.i8(), Permission: g.i8(),
			})
		}
		r.FilterResults = append(r.FilterResults, fr)
	}
	return r
}

func admDeleteAclsResponseToKmsg(r *DeleteAclsResponse) *kmsg.DeleteACLsResponse {
	k := kmsg.NewPtrDeleteACLsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, fr := range r.FilterResults {
		kr := kmsg.NewDeleteACLsResponseResult()
		kr.ErrorCode = int16(fr.ErrorCode)
		kr.ErrorMessage = ptrOf(fr.ErrorMessage)
		for _, m := range fr.MatchingACLs {
			km := kmsg.NewDeleteACLsResponseResultMatchingACL()
			km.ErrorCode = int16(m.ErrorCode)
			km.ErrorMessage = ptrOf(m.ErrorMessage)
			km.ResourceType = kmsg.ACLResourceType(m.ResourceType)
			km.ResourceName = m.ResourceName
			km.ResourcePatternType = kmsg.ACLResourcePatternType(m.PatternType)
			km.Principal, km.Host = m.Principal, m.Host
			km.Operation = kmsg.ACLOperation(m.Operation)
			km.PermissionType = kmsg.ACLPermissionType(m.Permission)
			kr.MatchingACLs = append(kr.MatchingACLs, km)
		}
		k.Results = append(k.Results, kr)
	}
	return k
}

func TestDeleteAclsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1031, aclsMin, aclsMax,
		admGenDeleteAclsResponse, (*DeleteAclsResponse).AppendTo, admDeleteAclsResponseToKmsg)
}

// TestAclsDecodeAllocs: decoding into reused structs allocates nothing.
func TestAclsDecodeAllocs(t *testing.T) {
	g := newOracleGen(7)
	for v := aclsMin; v <= aclsMax; v++ {
		d := admGenDescribeAclsRequest(g, v)
		d.SetVersion(v)
		db := d.AppendTo(nil)
		c := admGenCreateAclsRequest(g, v)
		c.SetVersion(v)
		cb := c.AppendTo(nil)
		x := admGenDeleteAclsRequest(g, v)
		x.SetVersion(v)
		xb := x.AppendTo(nil)
		var dr DescribeAclsRequest
		var cr CreateAclsRequest
		var xr DeleteAclsRequest
		_, _ = cr.Decode(cb, v), xr.Decode(xb, v)
		if n := testing.AllocsPerRun(100, func() {
			if dr.Decode(db, v) != nil || cr.Decode(cb, v) != nil || xr.Decode(xb, v) != nil {
				t.Fatal("decode failed")
			}
		}); n != 0 {
			t.Errorf("v%d: %v allocations per decode", v, n)
		}
	}
}
