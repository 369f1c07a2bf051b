package wire

// DescribeConfigs (key 32), versions 1–4, flexible from 4 (docs/design/kafka-protocol.md
// §2.1, §2.4). Kafka 4.0 removed v0 (KIP-896), the only version with IsDefault.
// The config enums below are shared with CreateTopics and the AlterConfigs
// APIs.

const (
	describeConfigsMin, describeConfigsMax int16 = 1, 4
	describeConfigsFlexible                int16 = 4
)

// ConfigResourceType is the kind of resource a config API addresses (Kafka
// ConfigResource.Type).
type ConfigResourceType int8

// Config resource types.
const (
	ConfigResourceUnknown       ConfigResourceType = 0
	ConfigResourceTopic         ConfigResourceType = 2
	ConfigResourceBroker        ConfigResourceType = 4
	ConfigResourceBrokerLogger  ConfigResourceType = 8
	ConfigResourceClientMetrics ConfigResourceType = 16
	ConfigResourceGroup         ConfigResourceType = 32
)

// ConfigSource is where a config value comes from (Kafka
// DescribeConfigsResponse.ConfigSource). The schema default is -1, "a
// placeholder value".
type ConfigSource int8

// Config sources.
const (
	ConfigSourceUnknown              ConfigSource = 0
	ConfigSourceDynamicTopic         ConfigSource = 1
	ConfigSourceDynamicBroker        ConfigSource = 2
	ConfigSourceDynamicDefaultBroker ConfigSource = 3
	ConfigSourceStaticBroker         ConfigSource = 4
	ConfigSourceDefault              ConfigSource = 5
	ConfigSourceDynamicBrokerLogger  ConfigSource = 6
	ConfigSourceClientMetrics        ConfigSource = 7
	ConfigSourceGroup                ConfigSource = 8
)

// ConfigType is the data type of a config (Kafka
// DescribeConfigsResponse.ConfigType), v3+.
type ConfigType int8

// Config data types.
const (
	ConfigTypeUnknown  ConfigType = 0
	ConfigTypeBoolean  ConfigType = 1
	ConfigTypeString   ConfigType = 2
	ConfigTypeInt      ConfigType = 3
	ConfigTypeShort    ConfigType = 4
	ConfigTypeLong     ConfigType = 5
	ConfigTypeDouble   ConfigType = 6
	ConfigTypeList     ConfigType = 7
	ConfigTypeClass    ConfigType = 8
	ConfigTypePassword ConfigType = 9
)

// DescribeConfigsRequest is the body of a DescribeConfigs request.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type DescribeConfigsRequest struct {
	// Resources are the resources to describe.
	Resources []DescribeConfigsRequestResource
	// IncludeSynonyms asks for each config's synonyms (v1+).
	IncludeSynonyms bool
	// IncludeDocumentation asks for each config's documentation (v3+).
	IncludeDocumentation bool
}

// DescribeConfigsRequestResource is one resource to describe.
type DescribeConfigsRequestResource struct {
	// ResourceType is the kind of resource.
	ResourceType ConfigResourceType
	// ResourceName is the topic name, broker id, ...
	ResourceName string
	// ConfigNames (Kafka: ConfigurationKeys) are the keys to describe. nil
	// means null, "list all configuration keys"; a non-nil empty slice asks
	// for none.
	ConfigNames []string
}

// Decode parses a DescribeConfigs request body of the given version into r,
// reusing the capacity of r's slices. Strings alias body: they are valid
// until the frame is released. Unknown tagged fields are skipped. On error
// r's contents are unspecified.
func (r *DescribeConfigsRequest) Decode(body []byte, version int16) error {
	if version < describeConfigsMin || version > describeConfigsMax {
		return ErrUnsupportedVersion
	}
	flex := version >= describeConfigsFlexible
	rd := NewReader(body)

	// ResourceType, name, key-array count (, tags).
	resMin := 7
	if flex {
		resMin = 4
	}
	r.Resources = resize(r.Resources, arrayLen(&rd, flex, resMin))
	for i := range r.Resources {
		res := &r.Resources[i]
		res.ResourceType = ConfigResourceType(rd.Int8())
		res.ResourceName = rd.Str(flex)
		// ConfigurationKeys: "nullableVersions": "0+".
		res.ConfigNames = strs(&rd, flex, true, res.ConfigNames)
		endStruct(&rd, flex)
	}
	// "Version 1 adds IncludeSynonyms."
	r.IncludeSynonyms = false
	if version >= 1 {
		r.IncludeSynonyms = rd.Bool()
	}
	// IncludeDocumentation: "versions": "3+".
	r.IncludeDocumentation = false
	if version >= 3 {
		r.IncludeDocumentation = rd.Bool()
	}
	endStruct(&rd, flex)
	return rd.Complete()
}

// DescribeConfigsResponse is the body of a DescribeConfigs response.
type DescribeConfigsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// Resources (Kafka: Results) holds one result per requested resource.
	Resources []DescribeConfigsResponseResource
}

// DescribeConfigsResponseResource is the result for one resource.
type DescribeConfigsResponseResource struct {
	// ErrorCode is the result for this resource.
	ErrorCode ErrorCode
	// ErrorMessage is a human-readable error, null on success.
	ErrorMessage NullString
	// ResourceType echoes the request.
	ResourceType ConfigResourceType
	// ResourceName echoes the request.
	ResourceName string
	// Configs are the described configs.
	Configs []DescribeConfigsResponseResourceConfig
}

// DescribeConfigsResponseResourceConfig is one described config.
type DescribeConfigsResponseResourceConfig struct {
	// Name is the config key.
	Name string
	// Value is the config value, null for sensitive configs.
	Value NullString
	// ReadOnly reports whether the config cannot be altered.
	ReadOnly bool
	// Source is where the value came from (v1+).
	Source ConfigSource
	// IsSensitive reports whether the value is hidden.
	IsSensitive bool
	// ConfigSynonyms (Kafka: Synonyms) are the values this config would take
	// from other sources, highest precedence first (v1+).
	ConfigSynonyms []DescribeConfigsResponseResourceConfigConfigSynonym
	// ConfigType is the config's data type (v3+).
	ConfigType ConfigType
	// Documentation describes the config, or null (v3+).
	Documentation NullString
}

// DescribeConfigsResponseResourceConfigConfigSynonym is one synonym of a
// config (v1+).
type DescribeConfigsResponseResourceConfigConfigSynonym struct {
	// Name is the synonym's key, e.g. "log.retention.ms".
	Name string
	// Value is the synonym's value, or null.
	Value NullString
	// Source is where the synonym's value came from.
	Source ConfigSource
}

// AppendTo appends the response body for the given version to dst.
func (r *DescribeConfigsResponse) AppendTo(dst []byte, version int16) []byte {
	flex := version >= describeConfigsFlexible
	dst = AppendInt32(dst, r.ThrottleMillis)
	dst = AppendArrayLen(dst, flex, len(r.Resources))
	for i := range r.Resources {
		res := &r.Resources[i]
		dst = AppendInt16(dst, int16(res.ErrorCode))
		dst = AppendNullableStr(dst, flex, res.ErrorMessage.S, res.ErrorMessage.Valid)
		dst = AppendInt8(dst, int8(res.ResourceType))
		dst = AppendStr(dst, flex, res.ResourceName)
		dst = AppendArrayLen(dst, flex, len(res.Configs))
		for j := range res.Configs {
			c := &res.Configs[j]
			dst = AppendStr(dst, flex, c.Name)
			dst = AppendNullableStr(dst, flex, c.Value.S, c.Value.Valid)
			dst = AppendBool(dst, c.ReadOnly)
			// "Version 1 adds ConfigSource and the synonyms." (IsDefault,
			// "versions": "0", sat here; v0 is not served.)
			if version >= 1 {
				dst = AppendInt8(dst, int8(c.Source))
			}
			dst = AppendBool(dst, c.IsSensitive)
			if version >= 1 {
				dst = AppendArrayLen(dst, flex, len(c.ConfigSynonyms))
				for k := range c.ConfigSynonyms {
					s := &c.ConfigSynonyms[k]
					dst = AppendStr(dst, flex, s.Name)
					dst = AppendNullableStr(dst, flex, s.Value.S, s.Value.Valid)
					dst = AppendInt8(dst, int8(s.Source))
					dst = AppendEmptyTags(dst, flex)
				}
			}
			// ConfigType and Documentation: "versions": "3+".
			if version >= 3 {
				dst = AppendInt8(dst, int8(c.ConfigType))
				dst = AppendNullableStr(dst, flex, c.Documentation.S, c.Documentation.Valid)
			}
			dst = AppendEmptyTags(dst, flex)
		}
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *DescribeConfigsResponse) CountErrors(c ErrorCounter) {
	for i := range r.Resources {
		countError(c, r.Resources[i].ErrorCode)
	}
}
