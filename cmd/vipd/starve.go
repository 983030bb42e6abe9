package main

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/internal/sched"
)

// oneProcessor runs the daemon's Go code on one processor (GOMAXPROCS=1)
// unless the environment sets GOMAXPROCS. An advert costs microseconds of
// work; with more processors each packet a reader hands to an election
// loop wakes a second thread to run it, and the runtime re-reads the CPU
// affinity every second. A goroutine blocked in a system call (netlink, a
// tracker's exec) still leaves the processor to the others.
func oneProcessor(log *slog.Logger) {
	if os.Getenv("GOMAXPROCS") != "" {
		log.Debug("GOMAXPROCS from the environment", "gomaxprocs", runtime.GOMAXPROCS(0))
		return
	}
	runtime.GOMAXPROCS(1)
}

// protectFromStarvation applies the starvation protection the operator
// turned on: locked memory, real-time scheduling. A refusal (a missing
// capability) is logged as an error and the daemon runs on unprotected:
// refusing to hold the address at all would be worse.
func protectFromStarvation(g config.Global, log *slog.Logger) {
	if g.LockMemory {
		if err := sched.LockMemory(); err != nil {
			log.Error("lock_memory: running without locked memory", "error", err)
		} else {
			log.Info("memory locked (lock_memory)")
		}
	}
	if g.RealtimePriority > 0 {
		if err := sched.Realtime(sched.Policy(g.RealtimePolicy), g.RealtimePriority); err != nil {
			log.Error("realtime_priority: running under the ordinary scheduler", "error", err)
		} else {
			log.Info("real-time scheduling (hooks and exec trackers stay on the ordinary scheduler)",
				"policy", g.RealtimePolicy, "priority", g.RealtimePriority)
		}
	}
}

// keepRealtimeEvery is how often threads the Go runtime created since are
// given the real-time policy (SCHED_RESET_ON_FORK starts them without it).
const keepRealtimeEvery = 5 * time.Second

// keepRealtime gives new threads the policy until ctx ends.
func keepRealtime(ctx context.Context, g config.Global, log *slog.Logger) {
	if g.RealtimePriority == 0 {
		return
	}
	// Soon after the start, when the runtime makes most of its threads,
	// then every keepRealtimeEvery.
	t := time.NewTicker(keepRealtimeEvery / 5)
	defer t.Stop()
	for i := 0; ; i++ {
		if i == 10 {
			t.Reset(keepRealtimeEvery)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := sched.Keep(sched.Policy(g.RealtimePolicy), g.RealtimePriority); err != nil {
				log.Warn("realtime_priority: a new thread could not be given the policy", "error", err)
			} else if n > 0 {
				log.Debug("real-time policy given to new threads", "threads", n)
			}
		}
	}
}
