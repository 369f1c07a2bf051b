package bridge

import (
	"context"
	"math/bits"
	"slices"
	"sync"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/producer"
	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/wire"
)

// produceFanout is a state's scratch space for appending a Produce
// request's partitions concurrently (backends with network round trips:
// Iggy). Each partition is mapped into its own batch first, then every
// append runs at once, so a request of 16 partitions costs about one
// backend round trip instead of 16.
type produceFanout struct {
	batches []*message.Batch
	jobs    []appendJob
	wg      sync.WaitGroup
}

// appendJob is one partition's append and its outcome.
type appendJob struct {
	topic    string
	index    int32
	batch    *message.Batch
	producer producer.Batch
	topicAt  int // position in the response
	partAt   int
	code     wire.ErrorCode
	base     int64
	// queued is the append in its partition's queue when the request
	// queued its appends before running them (runAppends), else nil.
	queued *queuedAppend
	// refused: the transaction coordinator refused the batch before it
	// was queued (code says why); it is not appended.
	refused bool
	// panicked: the append panicked (logged and counted by catch).
	panicked bool
}

// maxRetainedFanout bounds the batch slots a pooled state keeps.
const maxRetainedFanout = 64

// The batches of concurrent Produce partitions come from pools by capacity
// class (powers of two, 16 KiB to maxRetainedBatch), shared by every state,
// and go back when the request is done: a state keeps none, so a request of
// 16 partitions × 1 MiB batches neither pins 16 MiB in each pooled state nor
// allocates afresh (and zeroes) when its state was trimmed.
const (
	minBatchClass = 14 // 16 KiB
	maxBatchClass = 22 // 4 MiB (maxRetainedBatch)
)

var batchPools [maxBatchClass - minBatchClass + 1]sync.Pool

// getBatch returns a batch whose buffer holds at least n bytes, headroom
// included.
func getBatch(n int) *message.Batch {
	c := max(bits.Len(uint(max(n, 1)-1)), minBatchClass)
	if c > maxBatchClass {
		return new(message.Batch) // grows as it is built; not pooled
	}
	if b, _ := batchPools[c-minBatchClass].Get().(*message.Batch); b != nil {
		return b
	}
	return &message.Batch{Buf: make([]byte, 0, 1<<c)}
}

// putBatch returns b to the pool of the largest class its capacity covers
// (or lets the garbage collector have it).
func putBatch(b *message.Batch) {
	c := bits.Len(uint(cap(b.Buf))) - 1 // 1<<c ≤ cap
	if c < minBatchClass || c > maxBatchClass {
		return
	}
	batchPools[c-minBatchClass].Put(b)
}

// batch returns the k-th partition's batch of this request, with room for
// about hint bytes (headroom included), from the class pools.
func (f *produceFanout) batch(k, hint int) *message.Batch {
	for len(f.batches) <= k {
		f.batches = append(f.batches, nil)
	}
	if b := f.batches[k]; b != nil {
		// A partition that failed before its append left its batch here.
		if cap(b.Buf) >= hint {
			return b
		}
		putBatch(b)
	}
	b := getBatch(hint)
	f.batches[k] = b
	return b
}

// trim gives the request's batches back to the class pools.
func (f *produceFanout) trim() {
	for i, b := range f.batches {
		if b != nil {
			putBatch(b)
			f.batches[i] = nil
		}
	}
	f.batches = f.batches[:0]
	if cap(f.batches) > maxRetainedFanout {
		f.batches = nil
	}
	clear(f.jobs[:cap(f.jobs)]) // drop topic names aliasing request frames
	f.jobs = f.jobs[:0]
}

// runAppends appends every job's batch of c concurrently and waits for all;
// the first runs on the calling goroutine, the others on pooled append
// workers (no goroutine or closure per partition: steady state allocates
// nothing). Each append runs under catch; when one panicked, runAppends
// re-raises errPartPanicked once all are done, so c is abandoned by the
// guard its handler runs under.
//
// On a backend with round trips every append is first put into its
// partition's queue, in request order, and the connection's next Produce
// may then start (pipeline.go). A transactional request's batches are
// admitted by the coordinator first, under one hold of the transaction
// that lasts until every append has finished (its markers wait for them);
// in a cluster, where a partition's leader admits them too, a request with
// one queues each append as it runs instead, and the next Produce waits.
func (g *Gateway) runAppends(ctx context.Context, c *call, f *produceFanout) {
	if queue, txnProducer := g.queuesFirst(f); queue {
		admitted := g.admitRequest(f, txnProducer)
		defer admitted.Done() // after every append, below
		rounds := c.cs.roundTokens()
		for i := range f.jobs {
			j := &f.jobs[i]
			if j.refused {
				continue
			}
			j.queued = g.queueAppend(ctx, j.topic, j.index, j.batch, &j.producer)
			j.queued.rounds = rounds
		}
		g.openProduce(c)
	}
	for i := 1; i < len(f.jobs); i++ {
		f.wg.Add(1)
		g.appends.start(appendTask{ctx: ctx, c: c, f: f, j: &f.jobs[i]})
	}
	g.runAppend(ctx, c, &f.jobs[0])
	f.wg.Wait()
	for i := range f.jobs {
		if f.jobs[i].panicked {
			panic(errPartPanicked)
		}
	}
}

// appendTask is one partition append of a Produce for a pooled worker.
type appendTask struct {
	ctx context.Context
	c   *call
	f   *produceFanout
	j   *appendJob
}

// maxAppendWorkers bounds the pooled append workers; past it an append runs
// on a goroutine of its own.
const maxAppendWorkers = 256

// runAppend runs one job's append under catch.
func (g *Gateway) runAppend(ctx context.Context, c *call, j *appendJob) {
	j.panicked = g.catch(c, func() {
		if j.refused {
			return // j.code says why
		}
		if w := j.queued; w != nil {
			j.queued = nil
			j.code, j.base = g.awaitAppend(j.topic, j.index, w)
			return
		}
		j.code, j.base = g.appendMapped(ctx, j.topic, j.index, j.batch, &j.producer)
	})
}

// queuesFirst reports whether f's appends are queued before they run
// (runAppends): on a backend with round trips (the coalesced path of
// appendMapped), unless one is transactional in a cluster or the
// transactional ones are not all of one producer and epoch. txnProducer is
// the transactional batches' producer, nil when there are none.
func (g *Gateway) queuesFirst(f *produceFanout) (queue bool, txnProducer *producer.Batch) {
	if g.caps.LocalLatency {
		return false, nil
	}
	for i := range f.jobs {
		pb := &f.jobs[i].producer
		switch {
		case !pb.Transactional:
		case g.cfg.Placement != nil:
			return false, nil
		case txnProducer == nil:
			txnProducer = pb
		case pb.ID != txnProducer.ID || pb.Epoch != txnProducer.Epoch:
			return false, nil // not one producer's: each is admitted on its own
		}
	}
	return true, txnProducer
}

// admitRequest admits the transactional batches of f, all of producer pb,
// under one hold of the transaction, marking the refused ones; the zero
// Produce when pb is nil (none is transactional).
func (g *Gateway) admitRequest(f *produceFanout, pb *producer.Batch) txn.Produce {
	if pb == nil {
		return txn.Produce{}
	}
	return g.txn.CheckProduceAll(pb.ID, pb.Epoch, len(f.jobs),
		func(i int) (string, int32, bool) {
			j := &f.jobs[i]
			return j.topic, j.index, j.producer.Transactional
		},
		func(i int, code wire.ErrorCode) {
			if code != wire.NoError {
				f.jobs[i].refused, f.jobs[i].code, f.jobs[i].base = true, code, -1
			}
		})
}

// runAppendTask runs one pooled append task and marks it done.
func (g *Gateway) runAppendTask(t appendTask) {
	g.runAppend(t.ctx, t.c, t.j)
	t.f.wg.Done()
}

// distinctPartitions counts the request's partition entries, or returns 0
// when a partition is named twice (in one topic entry, or a topic repeated): those must be appended in request
// order, so the request takes the sequential path. scratch is reused.
func distinctPartitions(req *wire.ProduceRequest, scratch *[]int32) int {
	n := 0
	for i := range req.Topics {
		for k := range i {
			if req.Topics[k].Name == req.Topics[i].Name {
				return 0
			}
		}
		ps := req.Topics[i].Partitions
		idx := (*scratch)[:0]
		for _, p := range ps {
			idx = append(idx, p.Index)
		}
		slices.Sort(idx)
		if len(slices.Compact(idx)) != len(ps) {
			*scratch = idx[:0]
			return 0
		}
		*scratch = idx[:0]
		n += len(ps)
	}
	return n
}
