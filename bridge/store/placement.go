package store

import "time"

// Placement says which of several kiggy instances over one backend serves
// what (docs/design/cluster.md): the live instances Metadata lists, the one
// leader of each partition with its leader epoch, the coordinator of each
// group. bridge/cluster implements it from a membership log in the backend.
// bridge.Config.Placement nil is a single instance: the gateway is every
// partition's leader and every group's coordinator.
//
// Every method is safe for concurrent use and cheap: the handlers call them
// once per partition or group of a request.
type Placement interface {
	// Brokers returns the live instances, by node id. The slice is shared:
	// callers must not modify it.
	Brokers() []Broker
	// Leader returns a partition's leader and leader epoch, and whether this
	// instance serves the partition now.
	Leader(topic string, partition int32) Route
	// Coordinator returns the node id of a group's coordinator (-1 when no
	// instance is live) and whether it is this instance.
	Coordinator(group string) (node int32, local bool)
	// Hold marks the start of appends: until Release(token) the instance
	// does not tell the others it gave up a partition it served when Hold
	// was called, so a partition is never appended to by two instances at
	// once (docs/design/cluster.md §5).
	Hold() (token uint64)
	// Release ends what Hold began.
	Release(token uint64)
}

// LeaseHolder is implemented by a Placement whose right to serve expires
// (bridge/cluster's lease, docs/design/cluster.md §5): a Produce's appends
// get no later deadline than LeaseDeadline, so an instance cut off from the
// membership log does not go on appending after others may have taken over.
type LeaseHolder interface {
	LeaseDeadline() time.Time
}

// ViewAcker is implemented by a Placement whose partitions move between
// instances (bridge/cluster's Membership): AckedView is the newest view
// every live instance has acknowledged, so every partition whose leader
// epoch is at most it has been let go of by its previous leader
// (docs/design/cluster.md §5). A Placement without it never moves
// anything (Static): view 0.
type ViewAcker interface {
	AckedView() uint64
}

// StateNotifier is implemented by a Placement that carries word of shared
// state changes between instances (bridge/cluster's notices,
// docs/design/cluster.md §10): an instance that stored a change to the
// shared state calls NoticeStateChange, which returns at once, and the
// others receive a value from StateNotices soon after and bring their views
// up to date. Notices only hasten what each instance's refresh does anyway:
// one may be lost.
type StateNotifier interface {
	NoticeStateChange()
	StateNotices() <-chan struct{}
}

// Route is a partition's place in the cluster.
type Route struct {
	// Leader is the leader's node id, -1 when no instance is live.
	Leader int32
	// Epoch is the partition's leader epoch: it increases every time the
	// leader changes (docs/design/cluster.md §4).
	Epoch int32
	// Serving: this instance is the leader and may serve the partition now
	// (the previous leader has let go of it, and this instance's lease on
	// its membership is fresh).
	Serving bool
}

// Broker is one live instance.
type Broker struct {
	NodeID int32
	// Endpoints are its advertised addresses, one per listener name.
	Endpoints []Endpoint
}

// Endpoint is one advertised address of a broker: where clients that came
// in on listener Listener (engine.ConnInfo.Listener) reach it.
type Endpoint struct {
	Listener string
	Host     string
	Port     int32
}
