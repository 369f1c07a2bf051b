package iggy

// partIndex is the read cache's partitions by topic and partition: a map by
// topic name of slices by partition, so that the reads of a Fetch, which
// come topic by topic, find each partition by an index after one look at
// the topic (the last topic found is remembered). A map keyed by name and
// partition hashed the name again for every partition: 16 % of the CPU of
// a Fetch of 1,000 partitions at their tail (docs/BENCHMARKS.md, "Fetch
// sessions"). Under the read cache's mu, as everything of it.
type partIndex struct {
	topics map[string]*topicParts
	last   *topicParts // the topic the last look found, nil for none
}

// maxSliced bounds the partitions a topic indexes by slice; those past it
// go to a map. A request may name any partition number, and the cache
// holds a read's partition until its poll says it does not exist: so a
// request cannot make a slice large, and a slice shrinks back when its
// last partitions go (trim).
const maxSliced = 1 << 12

// sliced reports whether partition i is indexed by slice (else in far).
func sliced(i int32) bool { return i >= 0 && i < maxSliced }

// topicParts is one topic's cached partitions: by index from 0 below
// maxSliced (nil where none is cached), in far the others; n counts them.
type topicParts struct {
	name  string // the topic, as the partitions' keys hold it (cloned)
	parts []*partCache
	far   map[int32]*partCache
	n     int
}

func newPartIndex() partIndex { return partIndex{topics: map[string]*topicParts{}} }

// topic returns topic's cached partitions, nil when there are none.
func (x *partIndex) topic(topic string) *topicParts {
	if x.last != nil && x.last.name == topic {
		return x.last
	}
	tp := x.topics[topic]
	if tp != nil {
		x.last = tp
	}
	return tp
}

// get returns the cached partition, nil when there is none.
func (x *partIndex) get(topic string, partition int32) *partCache {
	tp := x.topic(topic)
	switch {
	case tp == nil:
		return nil
	case sliced(partition):
		if int(partition) < len(tp.parts) {
			return tp.parts[partition]
		}
		return nil
	default:
		return tp.far[partition] // nil map: nil
	}
}

// put indexes p where no partition is indexed (the caller found none).
func (x *partIndex) put(p *partCache) {
	tp := x.topics[p.key.topic]
	if tp == nil {
		tp = &topicParts{name: p.key.topic}
		x.topics[tp.name] = tp
	}
	tp.n++
	i := p.key.partition
	if !sliced(i) {
		if tp.far == nil {
			tp.far = map[int32]*partCache{}
		}
		tp.far[i] = p
		return
	}
	for len(tp.parts) <= int(i) {
		tp.parts = append(tp.parts, nil)
	}
	tp.parts[i] = p
}

// remove drops p from the index if it is the partition indexed there.
func (x *partIndex) remove(p *partCache) {
	tp := x.topics[p.key.topic]
	if tp == nil || x.get(p.key.topic, p.key.partition) != p {
		return
	}
	if i := p.key.partition; !sliced(i) {
		delete(tp.far, i)
	} else {
		tp.parts[i] = nil
		tp.trim()
	}
	if tp.n--; tp.n == 0 {
		delete(x.topics, tp.name)
		if x.last == tp {
			x.last = nil
		}
	}
}

// each calls fn for every cached partition; fn may remove it.
func (x *partIndex) each(fn func(*partCache)) {
	for _, tp := range x.topics {
		tp.each(fn)
	}
}

// eachOf calls fn for every cached partition of topic; fn may remove it.
func (x *partIndex) eachOf(topic string, fn func(*partCache)) {
	if tp := x.topics[topic]; tp != nil {
		tp.each(fn)
	}
}

// trim drops the slice's trailing empty places, and its memory when it
// holds much more than it needs.
func (tp *topicParts) trim() {
	n := len(tp.parts)
	for n > 0 && tp.parts[n-1] == nil {
		n--
	}
	clear(tp.parts[n:])
	tp.parts = tp.parts[:n]
	if cap(tp.parts) > 2*n+16 {
		tp.parts = append([]*partCache(nil), tp.parts...)
	}
}

// each calls fn for every partition of tp; fn may remove it.
func (tp *topicParts) each(fn func(*partCache)) {
	for _, p := range tp.parts {
		if p != nil {
			fn(p)
		}
	}
	for _, p := range tp.far {
		fn(p)
	}
}

// len is how many partitions are cached.
func (x *partIndex) len() int {
	n := 0
	for _, tp := range x.topics {
		n += tp.n
	}
	return n
}
