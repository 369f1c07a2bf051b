package wire

// AlterConfigs (key 33), versions 0–2, flexible from 2, and
// IncrementalAlterConfigs (key 44), versions 0–1, flexible from 1
// (docs/design/kafka-protocol.md §2.1, §2.4). Both responses have the same shape.

const (
	alterConfigsMin, alterConfigsMax int16 = 0, 2
	alterConfigsFlexible             int16 = 2

	incrementalAlterConfigsMin, incrementalAlterConfigsMax int16 = 0, 1
	incrementalAlterConfigsFlexible                        int16 = 1
)

// IncrementalAlterConfigOp is the operation of one IncrementalAlterConfigs
// entry (Kafka AlterConfigOp.OpType).
type IncrementalAlterConfigOp int8

// IncrementalAlterConfigs operations.
const (
	// IncrementalAlterConfigSet sets the value.
	IncrementalAlterConfigSet IncrementalAlterConfigOp = 0
	// IncrementalAlterConfigDelete reverts the config to its default.
	IncrementalAlterConfigDelete IncrementalAlterConfigOp = 1
	// IncrementalAlterConfigAppend adds the value to a list config.
	IncrementalAlterConfigAppend IncrementalAlterConfigOp = 2
	// IncrementalAlterConfigSubtract removes the value from a list config.
	IncrementalAlterConfigSubtract IncrementalAlterConfigOp = 3
)

// AlterConfigsRequest is the body of an AlterConfigs request, which replaces
// each resource's whole dynamic config set.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type AlterConfigsRequest struct {
	// Resources are the resources to alter.
	Resources []AlterConfigsRequestResource
	// ValidateOnly asks for a dry run.
	ValidateOnly bool
}

// AlterConfigsRequestResource is one resource's new configs.
type AlterConfigsRequestResource struct {
	// ResourceType is the kind of resource.
	ResourceType ConfigResourceType
	// ResourceName is the topic name, broker id, ...
	ResourceName string
	// Configs are the configs to set.
	Configs []AlterConfigsRequestResourceConfig
}

// AlterConfigsRequestResourceConfig is one config to set.
type AlterConfigsRequestResourceConfig struct {
	// Name is the config key.
	Name string
	// Value is the new value, or null.
	Value NullString
}

// Decode parses an AlterConfigs request body of the given version into r,
// reusing the capacity of r's slices. Strings alias body: they are valid
// until the frame is released. Unknown tagged fields are skipped. On error
// r's contents are unspecified.
func (r *AlterConfigsRequest) Decode(body []byte, version int16) error {
	if version < alterConfigsMin || version > alterConfigsMax {
		return ErrUnsupportedVersion
	}
	// "Version 2 enables flexible versions."
	flex := version >= alterConfigsFlexible
	rd := NewReader(body)

	// ResourceType, name, config count (, tags); a config is a name and a
	// nullable value (, tags).
	resMin, configMin := 7, 4
	if flex {
		resMin, configMin = 4, 3
	}
	r.Resources = resize(r.Resources, arrayLen(&rd, flex, resMin))
	for i := range r.Resources {
		res := &r.Resources[i]
		res.ResourceType = ConfigResourceType(rd.Int8())
		res.ResourceName = rd.Str(flex)
		res.Configs = resize(res.Configs, arrayLen(&rd, flex, configMin))
		for j := range res.Configs {
			c := &res.Configs[j]
			c.Name = rd.Str(flex)
			c.Value = nullStr(&rd, flex)
			endStruct(&rd, flex)
		}
		endStruct(&rd, flex)
	}
	r.ValidateOnly = rd.Bool()
	endStruct(&rd, flex)
	return rd.Complete()
}

// AlterConfigsResponse is the body of an AlterConfigs response.
type AlterConfigsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// Resources (Kafka: Responses) holds one result per resource.
	Resources []AlterConfigsResponseResource
}

// AlterConfigsResponseResource is the result for one resource.
type AlterConfigsResponseResource struct {
	// ErrorCode is the result for this resource.
	ErrorCode ErrorCode
	// ErrorMessage is a human-readable error, null on success.
	ErrorMessage NullString
	// ResourceType echoes the request.
	ResourceType ConfigResourceType
	// ResourceName echoes the request.
	ResourceName string
}

// AppendTo appends the response body for the given version to dst.
func (r *AlterConfigsResponse) AppendTo(dst []byte, version int16) []byte {
	return appendAlterConfigsResults(dst, version >= alterConfigsFlexible, r.ThrottleMillis, r.Resources)
}

// IncrementalAlterConfigsRequest is the body of an IncrementalAlterConfigs
// request, which changes individual configs.
//
// Decode fills it from a frame; its strings alias that frame and are valid
// until the frame is released.
type IncrementalAlterConfigsRequest struct {
	// Resources are the resources to alter.
	Resources []IncrementalAlterConfigsRequestResource
	// ValidateOnly asks for a dry run.
	ValidateOnly bool
}

// IncrementalAlterConfigsRequestResource is one resource's changes.
type IncrementalAlterConfigsRequestResource struct {
	// ResourceType is the kind of resource.
	ResourceType ConfigResourceType
	// ResourceName is the topic name, broker id, ...
	ResourceName string
	// Configs are the changes.
	Configs []IncrementalAlterConfigsRequestResourceConfig
}

// IncrementalAlterConfigsRequestResourceConfig is one change.
type IncrementalAlterConfigsRequestResourceConfig struct {
	// Name is the config key.
	Name string
	// Op (Kafka: ConfigOperation) is what to do with Value.
	Op IncrementalAlterConfigOp
	// Value is the operand, or null.
	Value NullString
}

// Decode parses an IncrementalAlterConfigs request body of the given version
// into r, reusing the capacity of r's slices. Strings alias body: they are
// valid until the frame is released. Unknown tagged fields are skipped. On
// error r's contents are unspecified.
func (r *IncrementalAlterConfigsRequest) Decode(body []byte, version int16) error {
	if version < incrementalAlterConfigsMin || version > incrementalAlterConfigsMax {
		return ErrUnsupportedVersion
	}
	// "Version 1 is the first flexible version."
	flex := version >= incrementalAlterConfigsFlexible
	rd := NewReader(body)

	// As AlterConfigs, plus the INT8 operation in each config.
	resMin, configMin := 7, 5
	if flex {
		resMin, configMin = 4, 4
	}
	r.Resources = resize(r.Resources, arrayLen(&rd, flex, resMin))
	for i := range r.Resources {
		res := &r.Resources[i]
		res.ResourceType = ConfigResourceType(rd.Int8())
		res.ResourceName = rd.Str(flex)
		res.Configs = resize(res.Configs, arrayLen(&rd, flex, configMin))
		for j := range res.Configs {
			c := &res.Configs[j]
			c.Name = rd.Str(flex)
			c.Op = IncrementalAlterConfigOp(rd.Int8())
			c.Value = nullStr(&rd, flex)
			endStruct(&rd, flex)
		}
		endStruct(&rd, flex)
	}
	r.ValidateOnly = rd.Bool()
	endStruct(&rd, flex)
	return rd.Complete()
}

// IncrementalAlterConfigsResponse is the body of an IncrementalAlterConfigs
// response.
type IncrementalAlterConfigsResponse struct {
	// ThrottleMillis is the quota throttle applied.
	ThrottleMillis int32
	// Resources (Kafka: Responses) holds one result per resource.
	Resources []IncrementalAlterConfigsResponseResource
}

// IncrementalAlterConfigsResponseResource is the result for one resource;
// it is the same as AlterConfigsResponseResource.
type IncrementalAlterConfigsResponseResource = AlterConfigsResponseResource

// AppendTo appends the response body for the given version to dst.
func (r *IncrementalAlterConfigsResponse) AppendTo(dst []byte, version int16) []byte {
	return appendAlterConfigsResults(dst, version >= incrementalAlterConfigsFlexible, r.ThrottleMillis, r.Resources)
}

// appendAlterConfigsResults encodes the body both AlterConfigs responses
// share: ThrottleTimeMs, then Responses { ErrorCode, ErrorMessage?,
// ResourceType, ResourceName }.
func appendAlterConfigsResults(dst []byte, flex bool, throttle int32, res []AlterConfigsResponseResource) []byte {
	dst = AppendInt32(dst, throttle)
	dst = AppendArrayLen(dst, flex, len(res))
	for i := range res {
		x := &res[i]
		dst = AppendInt16(dst, int16(x.ErrorCode))
		dst = AppendNullableStr(dst, flex, x.ErrorMessage.S, x.ErrorMessage.Valid)
		dst = AppendInt8(dst, int8(x.ResourceType))
		dst = AppendStr(dst, flex, x.ResourceName)
		dst = AppendEmptyTags(dst, flex)
	}
	return AppendEmptyTags(dst, flex)
}

// CountErrors reports r's error codes to c.
func (r *AlterConfigsResponse) CountErrors(c ErrorCounter) {
	countAlterResources(c, r.Resources)
}

// CountErrors reports r's error codes to c.
func (r *IncrementalAlterConfigsResponse) CountErrors(c ErrorCounter) {
	countAlterResources(c, r.Resources)
}

// countAlterResources reports the resource error codes of an AlterConfigs
// or IncrementalAlterConfigs response to c.
func countAlterResources(c ErrorCounter, rs []AlterConfigsResponseResource) {
	for i := range rs {
		countError(c, rs[i].ErrorCode)
	}
}
