package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vipd/vipd/daemon"
	"github.com/vipd/vipd/vrrp"
)

// statusLineEvery is the least time between two rewrites of STATUS=.
const statusLineEvery = 100 * time.Millisecond

// statusLine keeps systemd's STATUS= current off the election's path: a
// transition only marks it stale, and one goroutine rewrites it. Building
// it reads every instance, so rewriting it at each transition cost the
// square of the groups when 255 of them took over at once, on the takeover
// path itself.
type statusLine struct{ stale marks }

func newStatusLine() *statusLine { return &statusLine{stale: newMarks()} }

// mark: an instance changed; the line is rewritten soon.
func (l *statusLine) mark() { l.stale.mark() }

// marks tells a goroutine that something happened since it last looked:
// marks before it looks make one.
type marks chan struct{}

func newMarks() marks { return make(marks, 1) }

func (m marks) mark() {
	select {
	case m <- struct{}{}:
	default:
	}
}

// run writes the line after each mark, at most every `every`, until ctx
// ends; marks meanwhile make one rewrite.
func (l *statusLine) run(ctx context.Context, every time.Duration, write func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.stale:
		}
		write()
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// summary is the one-line STATUS= systemd shows.
func summary(d *daemon.Daemon) string {
	if d == nil {
		return ""
	}
	return summarize(d.Snapshot())
}

// summaryListsUpTo: with more instances than this, the line counts them
// by state instead of naming each.
const summaryListsUpTo = 4

func summarize(sts []daemon.Status) string {
	if len(sts) > summaryListsUpTo {
		return countStates(sts)
	}
	var parts []string
	for _, st := range sts {
		p := fmt.Sprintf("%s %s", st.Name, st.State)
		if st.Held {
			for _, v := range st.VIPs {
				p += " " + v.Addr().String()
			}
		}
		if !st.Since.IsZero() {
			p += " since " + st.Since.Format("15:04:05")
		}
		if st.Drained {
			p += " (drained)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// countStates is the line of many instances, e.g. "255 instances: 200
// MASTER, 55 BACKUP; 200 hold 200 VIPs; 1 drained".
func countStates(sts []daemon.Status) string {
	var order []vrrp.State
	count := map[vrrp.State]int{}
	var holding, vips, drained int
	for _, st := range sts {
		if count[st.State] == 0 {
			order = append(order, st.State)
		}
		count[st.State]++
		if st.Held {
			holding++
			vips += len(st.VIPs)
		}
		if st.Drained {
			drained++
		}
	}
	var states []string
	for _, s := range order {
		states = append(states, fmt.Sprintf("%d %s", count[s], s))
	}
	line := fmt.Sprintf("%d instances: %s; %d hold %d VIPs", len(sts), strings.Join(states, ", "), holding, vips)
	if drained > 0 {
		line += fmt.Sprintf("; %d drained", drained)
	}
	return line
}
