package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func admGenDescribeConfigsRequest(g *oracleGen, _ int16) *kmsg.DescribeConfigsRequest {
	r := kmsg.NewPtrDescribeConfigsRequest()
	r.IncludeSynonyms = g.bool()
	r.IncludeDocumentation = g.bool()
	r.UnknownTags = g.tags()
	for range g.n(true) {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceType(g.i8())
		res.ResourceName = g.str()
		switch g.r.IntN(3) {
		case 0: // null: all keys
		case 1:
			res.ConfigNames = []string{}
		default:
			for range g.n(false) {
				res.ConfigNames = append(res.ConfigNames, g.str())
			}
		}
		res.UnknownTags = g.tags()
		r.Resources = append(r.Resources, res)
	}
	return r
}

func admDescribeConfigsRequestToKmsg(r *DescribeConfigsRequest, v int16) *kmsg.DescribeConfigsRequest {
	k := kmsg.NewPtrDescribeConfigsRequest()
	k.Version = v
	k.IncludeSynonyms = r.IncludeSynonyms
	k.IncludeDocumentation = r.IncludeDocumentation
	for _, res := range r.Resources {
		kr := kmsg.NewDescribeConfigsRequestResource()
		kr.ResourceType = kmsg.ConfigResourceType(res.ResourceType)
		kr.ResourceName = res.ResourceName
		if res.ConfigNames != nil {
			kr.ConfigNames = append([]string{}, res.ConfigNames...)
		}
		k.Resources = append(k.Resources, kr)
	}
	return k
}

func TestDescribeConfigsRequestOracle(t *testing.T) {
	admRequestOracle(t, 32, describeConfigsMin, describeConfigsMax,
		admGenDescribeConfigsRequest, (*DescribeConfigsRequest).Decode, admDescribeConfigsRequestToKmsg)
}

// TestDescribeConfigsNullKeys pins null ConfigurationKeys ("list all
// configuration keys") against an empty list, on a reused struct, and that
// flags absent from older versions decode as false.
func TestDescribeConfigsNullKeys(t *testing.T) {
	var r DescribeConfigsRequest
	for v := describeConfigsMin; v <= describeConfigsMax; v++ {
		for _, keys := range [][]string{{"retention.ms"}, nil, {}, nil} {
			k := kmsg.NewPtrDescribeConfigsRequest()
			k.Version = v
			k.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: 2, ResourceName: "t", ConfigNames: keys}}
			k.IncludeDocumentation = true
			if err := r.Decode(k.AppendTo(nil), v); err != nil {
				t.Fatal(err)
			}
			got := r.Resources[0].ConfigNames
			if (got == nil) != (keys == nil) || len(got) != len(keys) {
				t.Fatalf("v%d: keys %q decoded as %q (nil %v)", v, keys, got, got == nil)
			}
			if r.IncludeDocumentation != (v >= 3) {
				t.Fatalf("v%d: IncludeDocumentation %v", v, r.IncludeDocumentation)
			}
		}
	}
}

func admGenDescribeConfigsResponse(g *oracleGen, _ int16) *DescribeConfigsResponse {
	r := &DescribeConfigsResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		res := DescribeConfigsResponseResource{
			ErrorCode:    ErrorCode(g.i16()),
			ErrorMessage: g.ns(),
			ResourceType: ConfigResourceType(g.i8()),
			ResourceName: g.str(),
		}
		for range g.n(false) {
			c := DescribeConfigsResponseResourceConfig{
				Name:          g.str(),
				Value:         g.ns(),
				ReadOnly:      g.bool(),
				Source:        ConfigSource(g.i8()),
				IsSensitive:   g.bool(),
				ConfigType:    ConfigType(g.i8()),
				Documentation: g.ns(),
			}
			for range g.n(false) {
				c.ConfigSynonyms = append(c.ConfigSynonyms, DescribeConfigsResponseResourceConfigConfigSynonym{
					Name: g.str(), Value: g.ns(), Source: ConfigSource(g.i8()),
				})
			}
			res.Configs = append(res.Configs, c)
		}
		r.Resources = append(r.Resources, res)
	}
	return r
}

func admDescribeConfigsResponseToKmsg(r *DescribeConfigsResponse) *kmsg.DescribeConfigsResponse {
	k := kmsg.NewPtrDescribeConfigsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, res := range r.Resources {
		kr := kmsg.NewDescribeConfigsResponseResource()
		kr.ErrorCode = int16(res.ErrorCode)
		kr.ErrorMessage = ptrOf(res.ErrorMessage)
		kr.ResourceType = kmsg.ConfigResourceType(res.ResourceType)
		kr.ResourceName = res.ResourceName
		for _, c := range res.Configs {
			kc := kmsg.NewDescribeConfigsResponseResourceConfig()
			kc.Name = c.Name
			kc.Value = ptrOf(c.Value)
			kc.ReadOnly = c.ReadOnly
			kc.Source = kmsg.ConfigSource(c.Source)
			kc.IsSensitive = c.IsSensitive
			kc.ConfigType = kmsg.ConfigType(c.ConfigType)
			kc.Documentation = ptrOf(c.Documentation)
			for _, s := range c.ConfigSynonyms {
				ks := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				ks.Name = s.Name
				ks.Value = ptrOf(s.Value)
				ks.Source = kmsg.ConfigSource(s.Source)
				kc.ConfigSynonyms = append(kc.ConfigSynonyms, ks)
			}
			kr.Configs = append(kr.Configs, kc)
		}
		k.Resources = append(k.Resources, kr)
	}
	return k
}

func TestDescribeConfigsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1032, describeConfigsMin, describeConfigsMax,
		admGenDescribeConfigsResponse, (*DescribeConfigsResponse).AppendTo, admDescribeConfigsResponseToKmsg)
}

// TestConfigEnumsMatchKmsg guards the enum values against kmsg's (which
// mirror Kafka's ConfigResource.Type, ConfigSource and ConfigType).
func TestConfigEnumsMatchKmsg(t *testing.T) {
	pairs := []struct {
		ours, theirs int8
		name         string
	}{
		{int8(ConfigResourceTopic), int8(kmsg.ConfigResourceTypeTopic), "topic"},
		{int8(ConfigResourceBroker), int8(kmsg.ConfigResourceTypeBroker), "broker"},
		{int8(ConfigResourceBrokerLogger), int8(kmsg.ConfigResourceTypeBrokerLogger), "broker logger"},
		{int8(ConfigResourceClientMetrics), int8(kmsg.ConfigResourceTypeClientMetrics), "client metrics"},
		{int8(ConfigResourceGroup), int8(kmsg.ConfigResourceTypeGroupConfig), "group"},
		{int8(ConfigSourceDynamicTopic), int8(kmsg.ConfigSourceDynamicTopicConfig), "dynamic topic"},
		{int8(ConfigSourceDynamicBroker), int8(kmsg.ConfigSourceDynamicBrokerConfig), "dynamic broker"},
		{int8(ConfigSourceDynamicDefaultBroker), int8(kmsg.ConfigSourceDynamicDefaultBrokerConfig), "dynamic default broker"},
		{int8(ConfigSourceStaticBroker), int8(kmsg.ConfigSourceStaticBrokerConfig), "static broker"},
		{int8(ConfigSourceDefault), int8(kmsg.ConfigSourceDefaultConfig), "default"},
		{int8(ConfigSourceDynamicBrokerLogger), int8(kmsg.ConfigSourceDynamicBrokerLoggerConfig), "dynamic broker logger"},
		{int8(ConfigSourceClientMetrics), int8(kmsg.ConfigSourceClientMetricsConfig), "client metrics config"},
		{int8(ConfigSourceGroup), int8(kmsg.ConfigSourceGroupConfig), "group config"},
		{int8(ConfigTypeBoolean), int8(kmsg.ConfigTypeBoolean), "boolean"},
		{int8(ConfigTypeLong), int8(kmsg.ConfigTypeLong), "long"},
		{int8(ConfigTypePassword), int8(kmsg.ConfigTypePassword), "password"},
		{int8(IncrementalAlterConfigSet), int8(kmsg.IncrementalAlterConfigOpSet), "set"},
		{int8(IncrementalAlterConfigDelete), int8(kmsg.IncrementalAlterConfigOpDelete), "delete"},
		{int8(IncrementalAlterConfigAppend), int8(kmsg.IncrementalAlterConfigOpAppend), "append"},
		{int8(IncrementalAlterConfigSubtract), int8(kmsg.IncrementalAlterConfigOpSubtract), "subtract"},
	}
	for _, p := range pairs {
		if p.ours != p.theirs {
			t.Errorf("%s: ours %d, kmsg %d", p.name, p.ours, p.theirs)
		}
	}
}
