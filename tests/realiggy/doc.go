// Package realiggy proves kiggy's Iggy path against the real iggy-server
// (Apache Iggy 0.9, internal/testing/iggyserver) with real faults: a kiggy process
// built from ./cmd/kiggy in front of a single node or a 3-node cluster on
// loopback, franz-go producers with acks=all recording every acknowledged
// record's partition, offset and unique value, iggy-server processes killed
// with SIGKILL under that load and restarted over their data, and everything
// read back through a fresh kiggy process at the end.
//
// TestIggyServerKill9 crashes a single node at each --iggy-durability level:
// at written and fsync every acknowledged record is at its acknowledged
// offset and no offset was acknowledged for two records; at buffered (Iggy's
// defaults, docs/IGGY.md "Durability") the same checker must find the loss.
// TestIggyClusterPrimaryKilledTwice kills the primary of a 3-node cluster,
// waits for kiggy to follow the new one, restarts the killed node, and kills
// the next primary, with the same checks (docs/IGGY.md "Iggy clusters").
// TestSystemStoreWriteDuringIggyFailover alters a client quota (the system
// store namespace's first write) and a topic config the moment the
// primary of a 3-node cluster is killed, and checks both are stored
// (docs/IGGY.md "kiggy's own state").
// TestClassicGroupAfterKiggyKill9 and TestConsumerGroupAfterKiggyKill9
// SIGKILL kiggy under load the moment a group change is answered (a classic
// group's SyncGroups; a consumer-protocol group's join, mid-rebalance) and
// check that the restarted kiggy restores the group as answered
// (docs/design/consumer-groups.md §6).
// TestCommitsSurviveKill9MidCompaction SIGKILLs kiggy under a commit load
// the moment it starts compacting its commit log, and checks that every
// acknowledged commit survives (docs/IGGY.md "Committed offsets").
// TestStateNoticesOnIggy runs two kiggy processes as one cluster and checks
// that a topic config changed through one is enforced by the other at once
// (docs/design/cluster.md §10 "Notices").
//
// The tests skip with a line naming KIGGY_IGGY_SERVER when no iggy-server
// binary is found, and fail instead under KIGGY_REQUIRE_TOOLS=1.
package realiggy
