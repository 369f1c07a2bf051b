package bridge

import (
	"context"
	"sync/atomic"
)

// workerPool runs jobs of one kind (a concurrent Fetch's partition reads, a
// concurrent Produce's partition appends) on pooled goroutines, so that a
// request does not start a goroutine per partition in steady state (the
// allocation tests, docs/design/architecture.md §4). Up to max workers wait
// for jobs until ctx ends; past that a job runs on a goroutine of its own.
type workerPool[T any] struct {
	jobs    chan T
	workers atomic.Int32
	max     int32
	run     func(T)
	ctx     context.Context
}

func newWorkerPool[T any](ctx context.Context, max int32, run func(T)) *workerPool[T] {
	return &workerPool[T]{jobs: make(chan T), max: max, run: run, ctx: ctx}
}

// start hands j to an idle worker, or starts one.
func (p *workerPool[T]) start(j T) {
	select {
	case p.jobs <- j:
		return
	default:
	}
	if p.workers.Add(1) > p.max {
		p.workers.Add(-1)
		go p.run(j)
		return
	}
	go p.work(j)
}

// work runs jobs until the pool's context ends.
func (p *workerPool[T]) work(j T) {
	defer p.workers.Add(-1)
	for {
		p.run(j)
		var zero T
		j = zero // let the job's references go while idle
		select {
		case j = <-p.jobs:
		case <-p.ctx.Done():
			return
		}
	}
}
