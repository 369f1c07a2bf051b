package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "SaslHandshake", key: KeySaslHandshake, min: 0, max: 1, flexFrom: saslHandshakeFlexible,
		build: func(g *oracleGen, _ int16, _ bool) csKmsg {
			k := kmsg.NewPtrSASLHandshakeRequest()
			k.Mechanism = g.str()
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r SaslHandshakeRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrSASLHandshakeRequest()
				k.Mechanism = r.Mechanism
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "SaslHandshake", key: KeySaslHandshake, min: 0, max: 1, flexFrom: saslHandshakeFlexible,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &SaslHandshakeResponse{ErrorCode: g.code(), Mechanisms: g.strs(g.nOuter())}
			k := kmsg.NewPtrSASLHandshakeResponse()
			k.ErrorCode, k.SupportedMechanisms = int16(r.ErrorCode), r.Mechanisms
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrSASLHandshakeResponse() },
	})
	csRegisterRequest(csReqAPI{
		name: "SaslAuthenticate", key: KeySaslAuthenticate, min: 0, max: 2, flexFrom: saslAuthenticateFlexible,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrSASLAuthenticateRequest()
			k.SASLAuthBytes = g.bytes()
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r SaslAuthenticateRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrSASLAuthenticateRequest()
				k.SASLAuthBytes = append([]byte{}, r.AuthBytes...)
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "SaslAuthenticate", key: KeySaslAuthenticate, min: 0, max: 2, flexFrom: saslAuthenticateFlexible,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &SaslAuthenticateResponse{ErrorCode: g.code(), ErrorMessage: g.ns(), AuthBytes: g.bytes()}
			if v >= 1 {
				r.SessionLifetimeMillis = g.i64()
			}
			k := kmsg.NewPtrSASLAuthenticateResponse()
			k.ErrorCode, k.ErrorMessage, k.SASLAuthBytes, k.SessionLifetimeMillis =
				int16(r.ErrorCode), ptrOf(r.ErrorMessage), r.AuthBytes, r.SessionLifetimeMillis
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrSASLAuthenticateResponse() },
	})
	csRegisterRequest(csReqAPI{
		name: "DescribeUserScramCredentials", key: KeyDescribeUserScramCredentials, min: 0, max: 0, flexFrom: 0,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			if !g.bool() {
				k.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{}
				for _, n := range g.strs(g.nOuter()) {
					u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
					u.Name = n
					u.UnknownTags = g.tagsIf(tags)
					k.Users = append(k.Users, u)
				}
			}
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r DescribeUserScramCredentialsRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
				if r.Users != nil {
					k.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{}
				}
				for _, n := range r.Users {
					u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
					u.Name = n
					k.Users = append(k.Users, u)
				}
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "DescribeUserScramCredentials", key: KeyDescribeUserScramCredentials, min: 0, max: 0, flexFrom: 0,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &DescribeUserScramCredentialsResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), ErrorMessage: g.ns()}
			k := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
			k.ThrottleMillis, k.ErrorCode, k.ErrorMessage = r.ThrottleMillis, int16(r.ErrorCode), ptrOf(r.ErrorMessage)
			for range g.nOuter() {
				res := DescribeUserScramCredentialsResult{User: g.str(), ErrorCode: g.code(), ErrorMessage: g.ns()}
				kr := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
				kr.User, kr.ErrorCode, kr.ErrorMessage = res.User, int16(res.ErrorCode), ptrOf(res.ErrorMessage)
				for range g.nInner() {
					ci := ScramCredentialInfo{Mechanism: g.i8(), Iterations: g.i32()}
					res.Credentials = append(res.Credentials, ci)
					kc := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					kc.Mechanism, kc.Iterations = ci.Mechanism, ci.Iterations
					kr.CredentialInfos = append(kr.CredentialInfos, kc)
				}
				r.Results = append(r.Results, res)
				k.Results = append(k.Results, kr)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrDescribeUserSCRAMCredentialsResponse() },
	})
	csRegisterRequest(csReqAPI{
		name: "AlterUserScramCredentials", key: KeyAlterUserScramCredentials, min: 0, max: 0, flexFrom: 0,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			for range g.nOuter() {
				d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
				d.Name, d.Mechanism, d.UnknownTags = g.str(), g.i8(), g.tagsIf(tags)
				k.Deletions = append(k.Deletions, d)
			}
			for range g.nOuter() {
				u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword, u.UnknownTags =
					g.str(), g.i8(), g.i32(), g.bytes(), g.bytes(), g.tagsIf(tags)
				k.Upsertions = append(k.Upsertions, u)
			}
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r AlterUserScramCredentialsRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				for _, d := range r.Deletions {
					kd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
					kd.Name, kd.Mechanism = d.Name, d.Mechanism
					k.Deletions = append(k.Deletions, kd)
				}
				for _, u := range r.Upsertions {
					ku := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
					ku.Name, ku.Mechanism, ku.Iterations = u.Name, u.Mechanism, u.Iterations
					ku.Salt, ku.SaltedPassword = append([]byte{}, u.Salt...), append([]byte{}, u.SaltedPassword...)
					k.Upsertions = append(k.Upsertions, ku)
				}
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "AlterUserScramCredentials", key: KeyAlterUserScramCredentials, min: 0, max: 0, flexFrom: 0,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &AlterUserScramCredentialsResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
			k.ThrottleMillis = r.ThrottleMillis
			for range g.nOuter() {
				res := AlterUserScramCredentialsResult{User: g.str(), ErrorCode: g.code(), ErrorMessage: g.ns()}
				r.Results = append(r.Results, res)
				kr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				kr.User, kr.ErrorCode, kr.ErrorMessage = res.User, int16(res.ErrorCode), ptrOf(res.ErrorMessage)
				k.Results = append(k.Results, kr)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrAlterUserSCRAMCredentialsResponse() },
	})
}

func TestSaslHandshakeRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("SaslHandshake")) }
func TestSaslHandshakeResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("SaslHandshake")) }
func TestSaslAuthenticateRequestOracle(t *testing.T) {
	csCheckRequest(t, csFindReq("SaslAuthenticate"))
}
func TestSaslAuthenticateResponseOracle(t *testing.T) {
	csCheckResponse(t, csFindResp("SaslAuthenticate"))
}
func TestDescribeUserScramCredentialsRequestOracle(t *testing.T) {
	csCheckRequest(t, csFindReq("DescribeUserScramCredentials"))
}
func TestDescribeUserScramCredentialsResponseOracle(t *testing.T) {
	csCheckResponse(t, csFindResp("DescribeUserScramCredentials"))
}
func TestAlterUserScramCredentialsRequestOracle(t *testing.T) {
	csCheckRequest(t, csFindReq("AlterUserScramCredentials"))
}
func TestAlterUserScramCredentialsResponseOracle(t *testing.T) {
	csCheckResponse(t, csFindResp("AlterUserScramCredentials"))
}

func init() {
	csRegisterRequest(csReqAPI{
		name: "DescribeClientQuotas", key: KeyDescribeClientQuotas, min: 0, max: 1, flexFrom: describeClientQuotasFlexible,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrDescribeClientQuotasRequest()
			for range g.nOuter() {
				c := kmsg.NewDescribeClientQuotasRequestComponent()
				c.EntityType, c.MatchType, c.Match = g.str(), kmsg.QuotasMatchType(g.i8()), g.ptr()
				c.UnknownTags = g.tagsIf(tags)
				k.Components = append(k.Components, c)
			}
			k.Strict = g.bool()
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r DescribeClientQuotasRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrDescribeClientQuotasRequest()
				for _, c := range r.Components {
					kc := kmsg.NewDescribeClientQuotasRequestComponent()
					kc.EntityType, kc.MatchType, kc.Match = c.EntityType, kmsg.QuotasMatchType(c.MatchType), ptrOf(c.Match)
					k.Components = append(k.Components, kc)
				}
				k.Strict = r.Strict
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "DescribeClientQuotas", key: KeyDescribeClientQuotas, min: 0, max: 1, flexFrom: describeClientQuotasFlexible,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &DescribeClientQuotasResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), ErrorMessage: g.ns()}
			k := kmsg.NewPtrDescribeClientQuotasResponse()
			k.ThrottleMillis, k.ErrorCode, k.ErrorMessage = r.ThrottleMillis, int16(r.ErrorCode), ptrOf(r.ErrorMessage)
			if g.bool() {
				r.Entries = []QuotaEntry{}
				k.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
				for range g.nOuter() {
					var e QuotaEntry
					ke := kmsg.NewDescribeClientQuotasResponseEntry()
					for range g.nInner() {
						en := QuotaEntity{Type: g.str(), Name: g.ns()}
						e.Entity = append(e.Entity, en)
						ken := kmsg.NewDescribeClientQuotasResponseEntryEntity()
						ken.Type, ken.Name = en.Type, ptrOf(en.Name)
						ke.Entity = append(ke.Entity, ken)
					}
					for range g.nInner() {
						val := QuotaValue{Key: g.str(), Value: float64(g.i32()) / 4}
						e.Values = append(e.Values, val)
						kv := kmsg.NewDescribeClientQuotasResponseEntryValue()
						kv.Key, kv.Value = val.Key, val.Value
						ke.Values = append(ke.Values, kv)
					}
					r.Entries = append(r.Entries, e)
					k.Entries = append(k.Entries, ke)
				}
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrDescribeClientQuotasResponse() },
	})
}

func TestDescribeClientQuotasRequestOracle(t *testing.T) {
	csCheckRequest(t, csFindReq("DescribeClientQuotas"))
}
func TestDescribeClientQuotasResponseOracle(t *testing.T) {
	csCheckResponse(t, csFindResp("DescribeClientQuotas"))
}

func init() {
	csRegisterRequest(csReqAPI{
		name: "AlterClientQuotas", key: KeyAlterClientQuotas, min: 0, max: 1, flexFrom: alterClientQuotasFlexible,
		build: func(g *oracleGen, _ int16, tags bool) csKmsg {
			k := kmsg.NewPtrAlterClientQuotasRequest()
			for range g.nOuter() {
				e := kmsg.NewAlterClientQuotasRequestEntry()
				for range g.nInner() {
					en := kmsg.NewAlterClientQuotasRequestEntryEntity()
					en.Type, en.Name = g.str(), g.ptr()
					en.UnknownTags = g.tagsIf(tags)
					e.Entity = append(e.Entity, en)
				}
				for range g.nInner() {
					op := kmsg.NewAlterClientQuotasRequestEntryOp()
					op.Key, op.Value, op.Remove = g.str(), float64(g.i32())/8, g.bool()
					op.UnknownTags = g.tagsIf(tags)
					e.Ops = append(e.Ops, op)
				}
				e.UnknownTags = g.tagsIf(tags)
				k.Entries = append(k.Entries, e)
			}
			k.ValidateOnly = g.bool()
			k.UnknownTags = g.tagsIf(tags)
			return k
		},
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r AlterClientQuotasRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				k := kmsg.NewPtrAlterClientQuotasRequest()
				for _, e := range r.Entries {
					ke := kmsg.NewAlterClientQuotasRequestEntry()
					for _, en := range e.Entity {
						ken := kmsg.NewAlterClientQuotasRequestEntryEntity()
						ken.Type, ken.Name = en.Type, ptrOf(en.Name)
						ke.Entity = append(ke.Entity, ken)
					}
					for _, op := range e.Ops {
						kop := kmsg.NewAlterClientQuotasRequestEntryOp()
						kop.Key, kop.Value, kop.Remove = op.Key, op.Value, op.Remove
						ke.Ops = append(ke.Ops, kop)
					}
					k.Entries = append(k.Entries, ke)
				}
				k.ValidateOnly = r.ValidateOnly
				return k, nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "AlterClientQuotas", key: KeyAlterClientQuotas, min: 0, max: 1, flexFrom: alterClientQuotasFlexible,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := &AlterClientQuotasResponse{ThrottleMillis: g.i32()}
			k := kmsg.NewPtrAlterClientQuotasResponse()
			k.ThrottleMillis = r.ThrottleMillis
			for range g.nOuter() {
				e := QuotaAlterationResult{ErrorCode: g.code(), ErrorMessage: g.ns()}
				ke := kmsg.NewAlterClientQuotasResponseEntry()
				ke.ErrorCode, ke.ErrorMessage = int16(e.ErrorCode), ptrOf(e.ErrorMessage)
				for range g.nInner() {
					en := QuotaEntity{Type: g.str(), Name: g.ns()}
					e.Entity = append(e.Entity, en)
					ken := kmsg.NewAlterClientQuotasResponseEntryEntity()
					ken.Type, ken.Name = en.Type, ptrOf(en.Name)
					ke.Entity = append(ke.Entity, ken)
				}
				r.Entries = append(r.Entries, e)
				k.Entries = append(k.Entries, ke)
			}
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, k
		},
		empty: func() csKmsg { return kmsg.NewPtrAlterClientQuotasResponse() },
	})
}

func TestAlterClientQuotasRequestOracle(t *testing.T) {
	csCheckRequest(t, csFindReq("AlterClientQuotas"))
}
func TestAlterClientQuotasResponseOracle(t *testing.T) {
	csCheckResponse(t, csFindResp("AlterClientQuotas"))
}
