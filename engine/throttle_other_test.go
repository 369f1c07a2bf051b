//go:build !linux

package engine

// mutedLeft is -1: there is no epoll engine here.
func mutedLeft(Server) int { return -1 }
