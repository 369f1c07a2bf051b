package topicconfig

// brokerDefs are the dynamic broker configs kiggy keeps (Kafka 4.4
// QuotaConfig.brokerQuotaConfigs, sorted by name): the replication
// throttles kafka-reassign-partitions --throttle sets on every broker a
// reassignment involves, and --verify deletes. kiggy has no replication
// traffic of its own (Iggy replicates its partitions), so they are stored,
// described and deleted, and throttle nothing.
var brokerDefs = []Def{
	{Name: "follower.replication.throttled.rate", Type: Long, Default: maxLong, check: atLeast(0), Doc: brokerThrottleDoc},
	{Name: "leader.replication.throttled.rate", Type: Long, Default: maxLong, check: atLeast(0), Doc: brokerThrottleDoc},
	{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Type: Long, Default: maxLong, check: atLeast(0), Doc: brokerThrottleDoc},
}

const brokerThrottleDoc = "Stored and described only: kiggy has no replication traffic to throttle (Iggy replicates its partitions)."

// Broker returns the dynamic broker configs kiggy keeps, sorted by name.
// The slice is shared: callers must not modify it.
func Broker() []Def { return brokerDefs }

// LookupBroker finds a dynamic broker config by name.
func LookupBroker(name string) (*Def, bool) { return lookupIn(brokerDefs, name) }

// UnknownBroker is the error for a broker config kiggy does not let
// clients alter: its broker settings are its command line.
func UnknownBroker(name string) error {
	return &Error{"kiggy's broker configs are its command-line settings (docs/CONFIGURATION.md); of the dynamic ones it keeps only the replication throttles: " + name + " cannot be altered"}
}
