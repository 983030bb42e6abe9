package main

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
)

// logQueueLen bounds the log lines waiting to be written.
const logQueueLen = 4096

// asyncHandler hands records to one writer goroutine, so that an election
// loop never waits for the log: a journald stalled by a busy disk, a
// terminal that is not read. When the queue is full a record is dropped
// and counted, and the writer says how many once it catches up. Order is
// kept.
type asyncHandler struct {
	inner slog.Handler
	q     *logQueue
}

type logQueue struct {
	// entries holds pointers: room for a line costs 8 bytes until a line
	// waits in it, where a record by value cost 300 (1.2 MB for the queue).
	entries chan *logEntry
	free    sync.Pool // of *logEntry: a burst of lines reuses them
	dropped atomic.Uint64
	root    slog.Handler // reports the drops
	done    chan struct{}
	mu      sync.RWMutex // guards closed against sends on a closed queue
	closed  bool         // after close, records are written at once
}

type logEntry struct {
	h slog.Handler
	r slog.Record
}

// newAsyncHandler starts the writer; close flushes what is queued and
// stops it.
func newAsyncHandler(inner slog.Handler) (h slog.Handler, close func()) {
	q := &logQueue{entries: make(chan *logEntry, logQueueLen), root: inner, done: make(chan struct{})}
	go q.write()
	return asyncHandler{inner: inner, q: q}, q.close
}

func (h asyncHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h asyncHandler) Handle(ctx context.Context, r slog.Record) error {
	h.q.mu.RLock()
	defer h.q.mu.RUnlock()
	if h.q.closed {
		return h.inner.Handle(ctx, r)
	}
	e, _ := h.q.free.Get().(*logEntry)
	if e == nil {
		e = new(logEntry)
	}
	e.h, e.r = h.inner, r.Clone()
	select {
	case h.q.entries <- e:
	default:
		h.q.dropped.Add(1)
		h.q.recycle(e)
	}
	return nil
}

func (h asyncHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return asyncHandler{inner: h.inner.WithAttrs(as), q: h.q}
}

func (h asyncHandler) WithGroup(name string) slog.Handler {
	return asyncHandler{inner: h.inner.WithGroup(name), q: h.q}
}

func (q *logQueue) write() {
	defer close(q.done)
	for e := range q.entries {
		e.h.Handle(context.Background(), e.r)
		if len(q.entries) == 0 {
			q.reportDrops(e.r)
		}
		q.recycle(e)
	}
}

// recycle clears e (so that a pooled entry keeps no attribute alive) and
// pools it.
func (q *logQueue) recycle(e *logEntry) {
	*e = logEntry{}
	q.free.Put(e)
}

// reportDrops says how many lines the full queue cost, once it is empty.
func (q *logQueue) reportDrops(last slog.Record) {
	n := q.dropped.Swap(0)
	if n == 0 {
		return
	}
	r := slog.NewRecord(last.Time, slog.LevelWarn, "log lines dropped: the log could not keep up", 0)
	r.AddAttrs(slog.Uint64("dropped", n))
	q.root.Handle(context.Background(), r)
}

// close writes what is queued; later records are written at once, on the
// caller's goroutine (the last words before an exit or a re-exec).
func (q *logQueue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	close(q.entries)
	q.mu.Unlock()
	<-q.done
}
