//go:build !linux

package engine

// DefaultKind is the engine New uses for kind "": the net engine where epoll
// does not exist.
const DefaultKind = KindNet

// NewEpoll returns ErrUnsupported: epoll exists only on Linux.
func NewEpoll(cfg Config, h Handler) (Server, error) { return nil, ErrUnsupported }
