package lab

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The parsers below read the /proc files the scale run samples (proc(5)).
// They are pure so the formats are tested without a running process.

// procStat is what the scale run needs from /proc/PID/stat.
type procStat struct {
	PPID int
	// UTime and STime are clock ticks (USER_HZ) of the whole thread group,
	// exited threads included.
	UTime, STime int64
	Threads      int
}

// parseProcStat parses /proc/PID/stat. The command name (field 2) may hold
// spaces and parentheses, so the fields are counted after its last ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("proc stat: no command name")
	}
	// After ')': state(3) ppid(4) ... utime(14) stime(15) ... num_threads(20).
	f := strings.Fields(string(b[i+1:]))
	const (
		ppidAt    = 4 - 3
		utimeAt   = 14 - 3
		stimeAt   = 15 - 3
		threadsAt = 20 - 3
	)
	if len(f) <= threadsAt {
		return procStat{}, fmt.Errorf("proc stat: %d fields after the command name, want at least %d", len(f), threadsAt+1)
	}
	var st procStat
	var errs []error
	num := func(name string, s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("proc stat: %s %q: %w", name, s, err))
		}
		return n
	}
	st.PPID = int(num("ppid", f[ppidAt]))
	st.UTime = num("utime", f[utimeAt])
	st.STime = num("stime", f[stimeAt])
	st.Threads = int(num("num_threads", f[threadsAt]))
	return st, errors.Join(errs...)
}

// schedStat is /proc/PID/task/TID/schedstat: time on the CPU, time waiting
// for it (both nanoseconds) and the number of times the task was run on a
// CPU, which for a daemon at rest is its number of wake-ups.
type schedStat struct {
	RunNS, WaitNS, Runs int64
}

func parseSchedstat(b []byte) (schedStat, error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return schedStat{}, fmt.Errorf("schedstat: %d fields, want 3", len(f))
	}
	var v [3]int64
	for i, s := range f {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return schedStat{}, fmt.Errorf("schedstat: field %d %q is not a count", i+1, s)
		}
		v[i] = n
	}
	return schedStat{RunNS: v[0], WaitNS: v[1], Runs: v[2]}, nil
}

// procStatus is what the scale run needs from /proc/PID/status (or a
// task's status: the switch counts there are the task's own).
type procStatus struct {
	RSSBytes, PeakRSSBytes int64 // VmRSS, VmHWM (absent for kernel threads)
	AnonBytes              int64 // RssAnon: private memory, not the binary's and libraries' file pages
	Voluntary, Involuntary int64 // voluntary_ctxt_switches, nonvoluntary_ctxt_switches
}

func parseStatus(b []byte) (procStatus, error) {
	var st procStatus
	seen := 0
	for line := range strings.Lines(string(b)) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		scale := int64(1)
		switch key {
		case "VmRSS":
			dst, scale = &st.RSSBytes, 1024
		case "VmHWM":
			dst, scale = &st.PeakRSSBytes, 1024
		case "RssAnon":
			dst, scale = &st.AnonBytes, 1024
		case "voluntary_ctxt_switches":
			dst = &st.Voluntary
			seen++
		case "nonvoluntary_ctxt_switches":
			dst = &st.Involuntary
			seen++
		default:
			continue
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			return procStatus{}, fmt.Errorf("status: %s has no value", key)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return procStatus{}, fmt.Errorf("status: %s %q: %w", key, f[0], err)
		}
		*dst = n * scale
	}
	if seen < 2 {
		return procStatus{}, errors.New("status: no context switch counts")
	}
	return st, nil
}

// perfCounts is what `perf stat -x,` reported for the software events the
// scale run asks for; a counter perf could not read is absent.
type perfCounts map[string]float64

// parsePerfCSV reads perf stat's CSV output (-x,): value, unit, event, ...
// Comment lines, empty lines and "<not counted>" or "<not supported>"
// values are skipped.
func parsePerfCSV(b []byte) perfCounts {
	out := perfCounts{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		// perf may append modifiers such as ":u" to the event name.
		name, _, _ := strings.Cut(f[2], ":")
		out[name] = v
	}
	return out
}
