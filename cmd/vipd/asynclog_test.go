package main

import (
	"bytes"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// blockingWriter blocks every write until release is closed.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func TestAsyncLogNeverBlocksAndCountsDrops(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{})}
	h, closeLog := newAsyncHandler(slog.NewTextHandler(w, nil))
	log := slog.New(h).With("instance", "k8s-api")
	// The writer is stuck: logging must still return, and what does not
	// fit is counted, not waited for.
	const lines = logQueueLen + 100
	for i := range lines {
		log.Info("line", "n", i)
	}
	close(w.release)
	closeLog()
	out := w.buf.String()
	if got := strings.Count(out, "msg=line"); got < logQueueLen-1 || got >= lines {
		t.Errorf("%d lines written of %d, want about the queue's %d", got, lines, logQueueLen)
	}
	if !strings.Contains(out, "log lines dropped") || !strings.Contains(out, "instance=k8s-api n=0") {
		t.Errorf("no report of the drops, or attributes lost:\n%s", out[len(out)-300:])
	}
	first := strings.Index(out, "n=0")
	second := strings.Index(out, "n=1\n")
	if first < 0 || second < first {
		t.Error("order not kept")
	}
}

// The queue's room costs nothing until lines wait in it: a record is about
// 300 bytes, and a queue of records held 1.2 MB from start, resident once
// the daemon had logged as many lines.
func TestAsyncLogQueueHoldsOnlyWaitingLines(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, closeLog := newAsyncHandler(slog.NewTextHandler(io.Discard, nil))
	runtime.ReadMemStats(&after)
	closeLog()
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("an empty log queue allocated %d KiB, want at most 64", got>>10)
	}
}
