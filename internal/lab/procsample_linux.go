package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, 100 on
// every Linux architecture Go supports.
const userHZ = 100

// procSample is a daemon's processes summed at one instant.
type procSample struct {
	at   time.Time
	pids []int
	// runNS and runs are schedstat summed over every thread; ticks is
	// utime+stime of every process.
	runNS, runs            int64
	ticks                  int64
	voluntary, involuntary int64
	rss, peakRSS, anon     int64
}

// sampleDaemon samples d's main process and its descendants (keepalived's
// VRRP child).
func sampleDaemon(d *Daemon) (procSample, error) {
	return sampleProcs(append([]int{d.PID()}, processTree(d.PID())...))
}

func sampleProcs(pids []int) (procSample, error) {
	s := procSample{at: time.Now()}
	var errs []error
	for _, pid := range pids {
		base := "/proc/" + strconv.Itoa(pid)
		b, err := os.ReadFile(base + "/stat")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st, err := parseProcStat(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("pid %d: %w", pid, err))
			continue
		}
		b, err = os.ReadFile(base + "/status")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		status, err := parseStatus(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("pid %d: %w", pid, err))
			continue
		}
		tasks, err := os.ReadDir(base + "/task")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range tasks {
			tb := base + "/task/" + t.Name()
			sb, err := os.ReadFile(tb + "/schedstat")
			if err != nil {
				continue // the thread exited meanwhile
			}
			ss, err := parseSchedstat(sb)
			if err != nil {
				errs = append(errs, fmt.Errorf("pid %d task %s: %w", pid, t.Name(), err))
				continue
			}
			tsb, err := os.ReadFile(tb + "/status")
			if err != nil {
				continue
			}
			ts, err := parseStatus(tsb)
			if err != nil {
				errs = append(errs, fmt.Errorf("pid %d task %s: %w", pid, t.Name(), err))
				continue
			}
			s.runNS += ss.RunNS
			s.runs += ss.Runs
			s.voluntary += ts.Voluntary
			s.involuntary += ts.Involuntary
		}
		s.pids = append(s.pids, pid)
		s.ticks += st.UTime + st.STime
		s.rss += status.RSSBytes
		s.peakRSS += status.PeakRSSBytes
		s.anon += status.AnonBytes
	}
	if len(s.pids) == 0 {
		errs = append(errs, errors.New("no process to sample"))
		return s, errors.Join(errs...)
	}
	return s, errors.Join(errs...)
}

// usageBetween is node's use over [a, b] of one daemon; the processes must
// be the same at both ends, or the difference would mix two lives.
func usageBetween(node int, role string, a, b procSample) (ScaleNode, error) {
	if !slices.Equal(a.pids, b.pids) {
		return ScaleNode{}, fmt.Errorf("n%d: the daemon's processes changed during the window (%v, then %v)", node, a.pids, b.pids)
	}
	const mib = 1 << 20
	return ScaleNode{
		Node: node, Role: role, Procs: len(b.pids),
		CPUMS:       float64(b.runNS-a.runNS) / 1e6,
		TickCPUMS:   float64(b.ticks-a.ticks) * 1000 / userHZ,
		RSSMiB:      float64(b.rss) / mib,
		PeakRSSMiB:  float64(b.peakRSS) / mib,
		AnonMiB:     float64(b.anon) / mib,
		Runs:        b.runs - a.runs,
		Voluntary:   b.voluntary - a.voluntary,
		Involuntary: b.involuntary - a.involuntary,
	}, nil
}

// perfJob is `perf stat` counting software events of a daemon's processes
// for one window.
type perfJob struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// perfEvents are software events: they need no hardware counters, which
// virtual machines often lack.
const perfEvents = "context-switches,cpu-clock"

// startPerf counts perfEvents on pids for d. perf attaches to the threads
// that exist when it starts; a daemon at rest makes no new ones.
func startPerf(ctx context.Context, bin string, pids []int, d time.Duration) (*perfJob, error) {
	ids := make([]string, len(pids))
	for i, p := range pids {
		ids[i] = strconv.Itoa(p)
	}
	j := &perfJob{}
	j.cmd = exec.CommandContext(ctx, bin, "stat", "-x,", "-e", perfEvents, "-p", strings.Join(ids, ","),
		"--", "sleep", strconv.FormatFloat(d.Seconds(), 'f', 3, 64))
	j.cmd.Stderr = &j.out // perf stat reports on stderr
	if err := j.cmd.Start(); err != nil {
		return nil, err
	}
	return j, nil
}

// wait returns the counts; empty when perf could not count here (it says
// "<not counted>" when the kernel refuses to attach to another process).
func (j *perfJob) wait() (perfCounts, error) {
	err := j.cmd.Wait()
	c := parsePerfCSV(j.out.Bytes())
	if err != nil {
		return c, fmt.Errorf("perf stat: %w: %s", err, strings.TrimSpace(j.out.String()))
	}
	return c, nil
}

// perfBinary finds perf, or says why the perf rows are skipped.
func perfBinary() (string, string) {
	p, err := exec.LookPath("perf")
	if err != nil {
		return "", "perf not installed (Debian: linux-perf): perf stat rows skipped"
	}
	return p, ""
}
