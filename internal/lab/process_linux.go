package lab

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// shutdownGrace is how long a daemon gets to exit after SIGTERM before its
// whole process tree is killed.
const shutdownGrace = 3 * time.Second

// DaemonSpec says how to run the daemon of one node.
type DaemonSpec struct {
	Kind DaemonKind
	// Binary is the executable; empty means "keepalived" from PATH for
	// Keepalived. Vipd needs a path.
	Binary string
	Group  GroupConfig
	// LogLevel is vipd's log_level (default "info").
	LogLevel string
	// Config, if set, may rewrite the generated config before it is written.
	Config func(node int, generated []byte) []byte
	// OnLine, if set, receives every line the daemon writes, as it arrives.
	OnLine func(node int, at time.Time, line string)
}

// LogLine is one line of a daemon's output with its arrival time.
type LogLine struct {
	At   time.Time
	Text string
}

// Daemon is a VRRP daemon process running in a node's namespace. Its stdout
// and stderr go to LogPath. The lab stops it on Close if nobody else did.
type Daemon struct {
	lab     *Lab
	node    int
	kind    DaemonKind
	cmd     *exec.Cmd
	logPath string
	cfgPath string
	started time.Time
	lines   *lineLog

	done    chan struct{}
	waitErr error // set before done is closed
}

// StartDaemon writes node i's config and starts its daemon. The process
// lives until Stop, Kill or Lab.Close.
func (l *Lab) StartDaemon(i int, spec DaemonSpec) (*Daemon, error) {
	if err := spec.Group.Validate(); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if i > len(spec.Group.Priorities) {
		return nil, fmt.Errorf("lab: no priority for n%d", i)
	}
	e := l.node(i)
	dir := filepath.Join(l.dir, e.label)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bin := spec.Binary
	var cfg []byte
	var args []string
	cfgPath := filepath.Join(dir, spec.Kind.String()+".conf")
	switch spec.Kind {
	case Keepalived:
		if bin == "" {
			bin = "keepalived"
		}
		p, err := exec.LookPath(bin)
		if err != nil {
			return nil, fmt.Errorf("lab: keepalived not found: %w", err)
		}
		bin = p
		cfg = keepalivedConfig(i, spec.Group)
		pid, vrrpPid := filepath.Join(dir, "keepalived.pid"), filepath.Join(dir, "keepalived-vrrp.pid")
		// A killed keepalived leaves its pid files; if the pid is still a
		// zombie at restart, keepalived says "already running" and exits.
		_ = os.Remove(pid)
		_ = os.Remove(vrrpPid)
		args = []string{"--dont-fork", "--log-console", "--no-syslog", "--vrrp", "-f", cfgPath, "-p", pid, "-r", vrrpPid}
	case Vipd:
		if bin == "" {
			return nil, errors.New("lab: vipd needs a binary path")
		}
		p, err := filepath.Abs(bin)
		if err != nil {
			return nil, err
		}
		bin = p
		cfgPath = filepath.Join(dir, "vipd.toml")
		cfg = vipdConfig(i, spec.Group, filepath.Join(dir, "vipd.sock"), spec.LogLevel)
		args = []string{"run", "--config", cfgPath}
	default:
		return nil, fmt.Errorf("lab: unknown daemon kind %v", spec.Kind)
	}
	if spec.Config != nil {
		cfg = spec.Config(i, cfg)
	}
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(l.dir, fmt.Sprintf("%s-%s.log", e.label, spec.Kind))
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		lab: l, node: i, kind: spec.Kind, logPath: logPath, cfgPath: cfgPath,
		lines: &lineLog{node: i, onLine: spec.OnLine, file: logFile},
		done:  make(chan struct{}),
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", e.name, bin}, args...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = d.lines, d.lines
	// Own process group: kill reaches keepalived's child processes too.
	// Pdeathsig: a lab process that dies abruptly takes its daemons along.
	// The kernel sends it when the forking *thread* exits, which is why
	// spawn forks from a thread the lab keeps for its whole life.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A grandchild that keeps the output pipe open must not block Wait.
	cmd.WaitDelay = time.Second
	d.cmd = cmd

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		logFile.Close()
		return nil, errors.New("lab: closed")
	}
	fmt.Fprintf(logFile, "# lab: %s starting %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))
	if err := l.spawn(cmd); err != nil {
		l.mu.Unlock()
		logFile.Close()
		return nil, fmt.Errorf("lab: start %s on n%d: %w", spec.Kind, i, err)
	}
	d.started = time.Now()
	l.daemons[d] = struct{}{}
	l.mu.Unlock()

	// Owned by the Daemon; exits when the process does (Close guarantees it).
	go func() {
		err := cmd.Wait()
		d.lines.flush()
		fmt.Fprintf(logFile, "# lab: %s exited: %v\n", time.Now().Format(time.RFC3339Nano), exitText(err))
		logFile.Close()
		d.waitErr = err
		close(d.done)
		l.mu.Lock()
		delete(l.daemons, d)
		l.mu.Unlock()
	}()
	l.log.Debug("daemon started", "node", NodeName(i), "kind", spec.Kind, "pid", cmd.Process.Pid)
	return d, nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// Node is the daemon's node number.
func (d *Daemon) Node() int { return d.node }

// Kind is the daemon's kind.
func (d *Daemon) Kind() DaemonKind { return d.kind }

// PID is the daemon's main process id.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// LogPath is the file with the daemon's stdout and stderr.
func (d *Daemon) LogPath() string { return d.logPath }

// ConfigPath is the generated config file.
func (d *Daemon) ConfigPath() string { return d.cfgPath }

// Started is when the process was started.
func (d *Daemon) Started() time.Time { return d.started }

// Done is closed when the main process has exited.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Err is the main process's exit error (nil for status 0); valid after Done.
func (d *Daemon) Err() error {
	<-d.done
	return d.waitErr
}

// Lines returns the output lines that arrived at or after since (the last
// few thousand are kept in memory; the log file has all of them).
func (d *Daemon) Lines(since time.Time) []LogLine { return d.lines.since(since) }

// Signal sends sig to the daemon's main process (SIGTERM = graceful stop).
func (d *Daemon) Signal(sig syscall.Signal) error {
	select {
	case <-d.done:
		return os.ErrProcessDone
	default:
	}
	return d.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL to the daemon's whole process tree at once, leaving
// whatever it configured (addresses) behind, like a crash.
func (d *Daemon) Kill() error {
	pids := processTree(d.PID())
	err := unix.Kill(-d.PID(), unix.SIGKILL)
	for _, p := range pids {
		_ = unix.Kill(p, unix.SIGKILL)
	}
	if errors.Is(err, unix.ESRCH) {
		err = nil
	}
	return err
}

// Stop sends SIGTERM and waits up to grace for the exit, then kills the
// process tree. It returns the exit error of the main process.
func (d *Daemon) Stop(grace time.Duration) error {
	d.stop(grace)
	return d.waitErr
}

func (d *Daemon) stop(grace time.Duration) {
	_ = d.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-d.done:
	case <-t.C:
		d.lab.log.Warn("daemon ignored SIGTERM; killing it", "node", NodeName(d.node), "kind", d.kind)
	}
	_ = d.Kill() // children that outlived the main process, if any
	<-d.done
}

// Usage is a daemon's resource use, summed over its process tree.
type Usage struct {
	CPU     time.Duration // on-CPU time since start
	PeakRSS int64         // bytes, sum of each process's high-water mark
	Procs   int
}

// Usage reads CPU time and peak RSS of the daemon's processes from /proc.
func (d *Daemon) Usage() (Usage, error) {
	var u Usage
	for _, pid := range append([]int{d.PID()}, processTree(d.PID())...) {
		cpu, rss, err := procUsage(pid)
		if err != nil {
			continue // exited meanwhile
		}
		u.CPU += cpu
		u.PeakRSS += rss
		u.Procs++
	}
	if u.Procs == 0 {
		return u, fmt.Errorf("lab: n%d %s: no process", d.node, d.kind)
	}
	return u, nil
}

// procUsage sums per-thread scheduler run time (nanoseconds, finer than the
// 10 ms ticks of /proc/PID/stat) and reads VmHWM.
func procUsage(pid int) (time.Duration, int64, error) {
	base := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(base + "/status")
	if err != nil {
		return 0, 0, err
	}
	var rss int64
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				rss = kb * 1024
			}
		}
	}
	tasks, err := os.ReadDir(base + "/task")
	if err != nil {
		return 0, 0, err
	}
	var cpu time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(base + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			cpu += time.Duration(ns)
		}
	}
	return cpu, rss, nil
}

// processTree lists the descendants of root (not root itself).
func processTree(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: parse after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// killNetnsProcs SIGKILLs every process whose network namespace is ns, so
// deleting the namespace really frees it.
func killNetnsProcs(ns netns.NsHandle) error {
	if !ns.IsOpen() {
		return nil
	}
	var want unix.Stat_t
	if err := unix.Fstat(int(ns), &want); err != nil {
		return fmt.Errorf("stat netns: %w", err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	self := os.Getpid()
	var killed []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) != nil {
			continue
		}
		if st.Dev == want.Dev && st.Ino == want.Ino {
			if unix.Kill(pid, unix.SIGKILL) == nil {
				killed = append(killed, pid)
			}
		}
	}
	// Give the kernel a moment to reap them so the namespace really goes.
	for _, pid := range killed {
		for range 100 {
			if unix.Kill(pid, 0) != nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// lineLog writes daemon output to the log file and keeps the last lines in
// memory with arrival times.
type lineLog struct {
	node   int
	onLine func(node int, at time.Time, line string)
	file   *os.File

	mu      sync.Mutex
	partial []byte
	lines   []LogLine
}

const keptLines = 4000

func (w *lineLog) Write(p []byte) (int, error) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.file.Write(p); err != nil {
		return 0, err
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.add(now, string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

func (w *lineLog) add(at time.Time, text string) {
	w.lines = append(w.lines, LogLine{At: at, Text: text})
	if len(w.lines) > keptLines {
		w.lines = append(w.lines[:0], w.lines[len(w.lines)-keptLines/2:]...)
	}
	if w.onLine != nil {
		w.onLine(w.node, at, text)
	}
}

func (w *lineLog) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.add(time.Now(), string(w.partial))
		w.partial = nil
	}
}

func (w *lineLog) since(t time.Time) []LogLine {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []LogLine
	for _, l := range w.lines {
		if !l.At.Before(t) {
			out = append(out, l)
		}
	}
	return out
}

// Daemons lists the daemons still running.
func (l *Lab) Daemons() []*Daemon {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*Daemon, 0, len(l.daemons))
	for d := range l.daemons {
		out = append(out, d)
	}
	return out
}

// spawner starts processes from one locked OS thread that lives as long as
// the lab. inNetns discards the threads it uses, and a child whose parent
// thread disappears would receive its Pdeathsig at once.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		// Unlocked on the way out so the thread survives: children that
		// outlive the lab (none should) get no signal from its exit.
		defer runtime.UnlockOSThread()
		for {
			select {
			case r := <-s.reqs:
				r.errc <- r.cmd.Start()
			case <-s.done:
				return
			}
		}
	}()
	return s
}

func (s *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, errc: make(chan error, 1)}
	select {
	case s.reqs <- r:
		return <-r.errc
	case <-s.done:
		return errors.New("lab: closed")
	}
}

func (s *spawner) stop() { close(s.done) }

func (l *Lab) spawn(cmd *exec.Cmd) error { return l.spawner.start(cmd) }

// SignalGroup sends sig to the daemon's whole process group (keepalived
// runs its VRRP work in a child process): SIGSTOP and SIGCONT freeze and
// thaw the daemon as a paused VM would be.
func (d *Daemon) SignalGroup(sig syscall.Signal) error {
	select {
	case <-d.done:
		return os.ErrProcessDone
	default:
	}
	return unix.Kill(-d.PID(), sig)
}
