package group

// Answers that wait for the store (Config.AwaitStore,
// docs/design/consumer-groups.md §6): an answer that tells a member of a
// change — a classic group's SyncGroup or JoinGroup, a consumer-protocol
// heartbeat — is held until the owner's writer reports the change stored,
// as Kafka answers once the group's records are appended. Classic answers
// are held per group (clheld while the form is queued, clflying once the
// writer took it); consumer-protocol answers by the change's sequence
// number (cwaiting, against ctaken and cstored).

// wakeWriter signals Config.ConsumerGroupChanged without blocking: a change
// to store, or an answer that now waits for one (the writer then writes at
// once, AnswersHeld).
func (c *Coordinator) wakeWriter() {
	if ch := c.cfg.ConsumerGroupChanged; ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// ClassicGroupsStored reports that the forms DirtyClassicGroups returned
// for ids were written (or that writing them failed: the group goes on,
// unstored, as without AwaitStore) and sends the answers held for
// them.
func (c *Coordinator) ClassicGroupsStored(ids []string) {
	var release []func()
	c.mu.Lock()
	for _, id := range ids {
		release = append(release, c.clflying[id]...)
		delete(c.clflying, id)
	}
	c.mu.Unlock()
	for _, f := range release {
		f()
	}
}

// AnswersWaiting reports whether any answer waits for a change to be
// stored, taken by the owner or not.
func (c *Coordinator) AnswersWaiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.clheld) > 0 || len(c.cwaiting) > 0 {
		return true
	}
	for _, fs := range c.clflying {
		if len(fs) > 0 {
			return true
		}
	}
	return false
}

// AnswersHeld reports whether answers wait for a change the owner has not
// yet taken (DirtyClassicGroups, DirtyConsumerGroups): its writer then
// writes without delay.
func (c *Coordinator) AnswersHeld() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.clheld) > 0 || (len(c.cwaiting) > 0 && c.cseq > c.ctaken)
}

// holdForStore holds o's answers until group id's queued or in-flight
// stored form is written, and reports whether it did (false: nothing of id
// is being stored, so o goes at once). g is locked; c.mu is taken.
func (c *Coordinator) holdForStore(id string, o *outbox) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	queued, flying := c.storingLocked(id)
	if c.closed || !queued && !flying {
		return false
	}
	held := *o
	*o = outbox{}
	if queued {
		if c.clheld == nil {
			c.clheld = map[string][]func(){}
		}
		c.clheld[id] = append(c.clheld[id], held.flush)
		c.wakeWriter()
	} else {
		c.clflying[id] = append(c.clflying[id], held.flush)
	}
	return true
}

// storing reports whether a stored form of group id is queued or being
// written. c.mu is taken.
func (c *Coordinator) storing(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	queued, flying := c.storingLocked(id)
	return queued || flying
}

// storingLocked is storing, split, with c.mu held.
func (c *Coordinator) storingLocked(id string) (queued, flying bool) {
	_, queued = c.cldirty[id]
	_, flying = c.clflying[id]
	return queued, flying
}

// releaseHeld sends every held answer, for Close: the writer's last write
// at shutdown is best effort, and no answer is left behind.
func (c *Coordinator) releaseHeld() {
	c.mu.Lock()
	var release []func()
	for _, fs := range c.clheld {
		release = append(release, fs...)
	}
	for _, fs := range c.clflying {
		release = append(release, fs...)
	}
	for _, w := range c.cwaiting {
		release = append(release, w.send)
	}
	c.clheld, c.clflying, c.cwaiting = nil, nil, nil
	c.mu.Unlock()
	for _, f := range release {
		f()
	}
}

// storeWaiter is an answer waiting until the consumer-group changes up to
// seq are stored.
type storeWaiter struct {
	seq  uint64
	send func()
}

// unstored returns cg's last change when it is not yet stored, else 0. cg
// is locked; c.mu is taken.
func (cg *cgroup) unstored() uint64 {
	c := cg.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if cg.dirtySeq > c.cstored {
		return cg.dirtySeq
	}
	return 0
}

// AfterConsumerStored holds send until the consumer-group change seq (a
// ConsumerHeartbeatResult's StoreSeq) is stored, and reports whether it
// did; false (stored already, or the coordinator closed) means answer now.
// As Kafka's coordinator answers a heartbeat once the records of its change
// are written: a member told of an epoch finds it after a crash.
func (c *Coordinator) AfterConsumerStored(seq uint64, send func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || seq <= c.cstored {
		return false
	}
	c.cwaiting = append(c.cwaiting, storeWaiter{seq, send})
	c.wakeWriter()
	return true
}

// ConsumerGroupsStored reports that the groups DirtyConsumerGroups last
// returned are written (or that writing them failed: the groups go on as
// they are) and sends the answers that waited for them.
func (c *Coordinator) ConsumerGroupsStored() {
	c.mu.Lock()
	c.cstored = c.ctaken
	var release []func()
	kept := c.cwaiting[:0]
	for _, w := range c.cwaiting {
		if w.seq <= c.cstored {
			release = append(release, w.send)
		} else {
			kept = append(kept, w)
		}
	}
	clear(c.cwaiting[len(kept):])
	c.cwaiting = kept
	c.mu.Unlock()
	for _, f := range release {
		f()
	}
}
