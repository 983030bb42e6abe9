package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vipd/vipd/announce"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/internal/lab"
)

// The tests in this file operate vipd the way an operator does. The first
// ones need no root: they run each control command of the CLI against a
// fake daemon on a temporary socket and check its output and exit code.
// The lab tests (TestLabOperate*) then drive the real binary's control
// commands against real daemons in network namespaces: status and history
// after a failover, drain and undrain with a client probing the VIP, reload
// of a bad and of a changed configuration, the control protocol spoken by
// hand, Prometheus metrics scraped from inside a node's namespace, and a
// notify hook that hangs.
//
// The binary upgrade (a Master re-executes a new binary and keeps the VIP)
// is tested in upgrade_lab_linux_test.go.

// ---------------------------------------------------------------------------
// The CLI against a fake daemon.

// opFakeDaemon answers the control socket with canned values and records
// the changes it was asked for.
type opFakeDaemon struct {
	mu        sync.Mutex
	status    []control.InstanceStatus
	history   []control.Transition
	reload    control.ReloadResult
	reloadErr error
	drains    []control.DrainRequest
	undrains  []string
}

func (f *opFakeDaemon) Status(context.Context) ([]control.InstanceStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, nil
}

func (f *opFakeDaemon) History(context.Context) ([]control.Transition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.history, nil
}

func (f *opFakeDaemon) Drain(_ context.Context, req control.DrainRequest) (control.DrainResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drains = append(f.drains, req)
	switch req.Instance {
	case "nope":
		return control.DrainResult{}, errors.New(`no instance "nope"`)
	case "":
		// Every instance: one did not hold the address, one found no taker.
		return control.DrainResult{
			Instances: []control.DrainedInstance{
				{Name: "k8s-api", State: control.StateMaster, Message: "no other host took over k8s-api within 10s"},
				{Name: "ingress", State: control.StateBackup, Message: "drained; it did not hold the address"},
			},
			Warning: "no other host took over k8s-api within 10s: this host holds the address again",
		}, nil
	}
	return control.DrainResult{Instances: []control.DrainedInstance{{
		Name: req.Instance, State: control.StateBackup, TakenOverBy: netip.MustParseAddr("198.51.100.12"),
		Message: "198.51.100.12 took over (priority 100)",
	}}}, nil
}

func (f *opFakeDaemon) Undrain(_ context.Context, instance string) (control.DrainResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.undrains = append(f.undrains, instance)
	return control.DrainResult{Instances: []control.DrainedInstance{{
		Name: instance, State: control.StateBackup, Message: "undrained: back at the configured priority",
	}}}, nil
}

func (f *opFakeDaemon) Reload(context.Context) (control.ReloadResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reload, f.reloadErr
}

func (f *opFakeDaemon) setReload(res control.ReloadResult, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reload, f.reloadErr = res, err
}

func (f *opFakeDaemon) lastDrain(t *testing.T) control.DrainRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.drains) == 0 {
		t.Fatal("the daemon got no drain request")
	}
	return f.drains[len(f.drains)-1]
}

// opServeFake serves h on a socket in a temporary directory.
func opServeFake(t *testing.T, h control.Handler) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vipd.sock")
	srv, err := control.Listen(path, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, h); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return path
}

// opRun runs the CLI in this process.
func opRun(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// opLine returns the first line of out that contains every part.
func opLine(out string, parts ...string) (string, bool) {
	for line := range strings.Lines(out) {
		ok := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				ok = false
				break
			}
		}
		if ok {
			return strings.TrimRight(line, "\n"), true
		}
	}
	return "", false
}

func opFakeFixture() *opFakeDaemon {
	now := time.Now()
	a := netip.MustParseAddr
	return &opFakeDaemon{
		status: []control.InstanceStatus{
			{
				Name: "k8s-api", Interface: "eth0", VRID: 51, LocalAddress: a("198.51.100.11"),
				State: control.StateMaster, Since: now.Add(-5 * time.Second),
				Priority: control.Priority{Base: 150, Effective: 150},
				Master:   control.Master{Address: a("198.51.100.11"), Priority: 150, AdvertInterval: control.Duration(time.Second), LastSeen: now},
				VIPs:     []netip.Prefix{netip.MustParsePrefix("198.51.100.10/32")}, VIPsHeld: true,
				Transitions: 2,
				LastTransition: &control.Transition{At: now.Add(-5 * time.Second), From: control.StateBackup, To: control.StateMaster,
					Reason: "master_down", Cause: "no advert from 198.51.100.12 for 361ms"},
				Counters: control.Counters{AdvertsSent: 42, AdvertsReceived: 7, GARPSent: 5},
			},
			{
				Name: "ingress", Interface: "eth0", VRID: 52, LocalAddress: a("198.51.100.11"),
				State: control.StateBackup, Since: now.Add(-time.Minute),
				Priority: control.Priority{Base: 100, Effective: 1, Parts: []control.PriorityPart{
					{Tracker: "drain", Contribution: -99, Detail: "drained by operator"},
				}},
				Drained: true, DrainNote: "ticket-42 (by uid 0 (root) pid 1)",
				Master: control.Master{Address: a("198.51.100.12"), Priority: 100, AdvertInterval: control.Duration(time.Second), LastSeen: now},
				VIPs:   []netip.Prefix{netip.MustParsePrefix("198.51.100.20/32")},
				LastTransition: &control.Transition{At: now.Add(-time.Minute), From: control.StateMaster, To: control.StateBackup,
					Reason: "resigned", Cause: "drained by operator: ticket-42"},
				Transitions: 3,
			},
		},
		history: []control.Transition{
			{At: now.Add(-10 * time.Second), Instance: "k8s-api", From: control.StateInitialize, To: control.StateBackup, Reason: "startup", Cause: "started"},
			{At: now.Add(-5 * time.Second), Instance: "k8s-api", From: control.StateBackup, To: control.StateMaster, Reason: "master_down", Cause: "no advert from 198.51.100.12 for 361ms"},
		},
	}
}

func TestCLIControlCommandsOutput(t *testing.T) {
	f := opFakeFixture()
	sock := opServeFake(t, f)

	t.Run("status", func(t *testing.T) {
		code, out, errOut := opRun("status", "--socket", sock)
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if !strings.HasPrefix(out, "INSTANCE") {
			t.Errorf("no header first:\n%s", out)
		}
		for _, want := range [][]string{
			{"INSTANCE", "STATE", "SINCE", "PRIO", "MASTER", "VIPS", "MOVES", "LAST CAUSE"},
			{"k8s-api", "MASTER", "150", "198.51.100.11 (us)", "198.51.100.10 held", "no advert from 198.51.100.12 for 361ms"},
			{"ingress", "BACKUP (drained)", "100-99=1", "198.51.100.12", "drained by operator: ticket-42"},
			{"drained", "ticket-42 (by uid 0 (root) pid 1)"},
			{"master", "198.51.100.12 priority 100, adverts every 1s"},
		} {
			if _, ok := opLine(out, want...); !ok {
				t.Errorf("no line with %q:\n%s", want, out)
			}
		}
	})

	t.Run("status --json", func(t *testing.T) {
		code, out, errOut := opRun("status", "--json", "--socket", sock)
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		var sts []control.InstanceStatus
		if err := json.Unmarshal([]byte(out), &sts); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if len(sts) != 2 || sts[0].Name != "k8s-api" || sts[0].State != control.StateMaster || !sts[0].VIPsHeld ||
			sts[0].LastTransition == nil || sts[0].LastTransition.Reason != "master_down" ||
			!sts[1].Drained || sts[1].Priority.Effective != 1 || sts[1].Master.Address.String() != "198.51.100.12" {
			t.Errorf("decoded status differs from the daemon's:\n%s", out)
		}
		// The keys scripts rely on, with empty lists as [] and durations
		// readable both ways.
		var raw []map[string]any
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"name", "state", "priority", "drained", "vips", "vips_held", "transitions", "trackers", "counters", "warnings"} {
			if _, ok := raw[0][key]; !ok {
				t.Errorf("status JSON lacks %q", key)
			}
		}
		if tr, ok := raw[0]["trackers"].([]any); !ok || len(tr) != 0 {
			t.Errorf("trackers = %#v, want []", raw[0]["trackers"])
		}
		if ai, _ := raw[0]["master"].(map[string]any)["advert_interval"].(map[string]any); ai["text"] != "1s" || ai["ms"] != 1000.0 {
			t.Errorf("master.advert_interval = %v, want {text: 1s, ms: 1000}", ai)
		}
	})

	t.Run("history", func(t *testing.T) {
		code, out, errOut := opRun("history", "--socket", sock)
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 3 || !regexp.MustCompile(`^TIME\s+INSTANCE\s+TRANSITION\s+CAUSE$`).MatchString(lines[0]) {
			t.Fatalf("want a header and 2 lines:\n%s", out)
		}
		row := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} {2,}k8s-api {2,}BACKUP -> MASTER {2,}no advert from 198\.51\.100\.12 for 361ms$`)
		if !row.MatchString(lines[2]) {
			t.Errorf("last line %q does not match %v", lines[2], row)
		}
		if !strings.Contains(lines[1], "INITIALIZE -> BACKUP") {
			t.Errorf("history not oldest first:\n%s", out)
		}
	})

	t.Run("history --json", func(t *testing.T) {
		code, out, _ := opRun("history", "--json", "--socket", sock)
		var ts []control.Transition
		if err := json.Unmarshal([]byte(out), &ts); code != 0 || err != nil {
			t.Fatalf("exit %d, %v:\n%s", code, err, out)
		}
		if len(ts) != 2 || ts[1].From != control.StateBackup || ts[1].To != control.StateMaster || ts[1].Reason != "master_down" || ts[1].Instance != "k8s-api" {
			t.Errorf("history JSON: %+v", ts)
		}
	})

	t.Run("drain --wait", func(t *testing.T) {
		code, out, errOut := opRun("drain", "--socket", sock, "--instance", "k8s-api", "--wait", "--timeout", "10s", "--note", "ticket-42")
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		req := f.lastDrain(t)
		if req.Instance != "k8s-api" || !req.Wait || time.Duration(req.Timeout) != 10*time.Second || req.Note != "ticket-42" {
			t.Errorf("the daemon got %+v", req)
		}
		// Who asked is the kernel's word, filled in by the server.
		if !strings.HasPrefix(req.By, fmt.Sprintf("uid %d", os.Getuid())) || !strings.Contains(req.By, fmt.Sprintf("pid %d", os.Getpid())) {
			t.Errorf("By = %q, want this process", req.By)
		}
		if _, ok := opLine(out, "INSTANCE", "STATE", "TAKEN OVER BY", "MESSAGE"); !ok {
			t.Errorf("no header:\n%s", out)
		}
		if _, ok := opLine(out, "k8s-api", "BACKUP", "198.51.100.12", "took over (priority 100)"); !ok {
			t.Errorf("no taker:\n%s", out)
		}
	})

	t.Run("drain all with a warning", func(t *testing.T) {
		code, out, errOut := opRun("drain", "--socket", sock)
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if req := f.lastDrain(t); req.Instance != "" || req.Wait {
			t.Errorf("the daemon got %+v, want every instance without waiting", req)
		}
		if _, ok := opLine(out, "TAKEN OVER BY"); ok {
			t.Errorf("a taken-over column without a taker:\n%s", out)
		}
		if _, ok := opLine(out, "ingress", "BACKUP", "drained; it did not hold the address"); !ok {
			t.Errorf("stdout:\n%s", out)
		}
		if _, ok := opLine(out, "WARNING: no other host took over k8s-api"); !ok {
			t.Errorf("no warning on stdout:\n%s", out)
		}
		// Without --wait the warning is in the table only, and the exit
		// status is 0 (with --wait it is 1: see "drain --wait, nobody").
		if errOut != "" {
			t.Errorf("stderr %q", errOut)
		}
	})

	t.Run("drain --wait, nobody", func(t *testing.T) {
		// `vipd drain --wait && reboot` must not reboot a host that still
		// holds the address.
		code, out, _ := opRun("drain", "--socket", sock, "--wait", "--timeout", "10s")
		if code != 1 {
			t.Errorf("exit %d, want 1 when no other host took over", code)
		}
		if _, ok := opLine(out, "WARNING: no other host took over k8s-api"); !ok {
			t.Errorf("no warning on stdout:\n%s", out)
		}
	})

	t.Run("drain --json", func(t *testing.T) {
		code, out, _ := opRun("drain", "--json", "--socket", sock, "--instance", "k8s-api")
		var res control.DrainResult
		if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
			t.Fatalf("exit %d, %v:\n%s", code, err, out)
		}
		if len(res.Instances) != 1 || res.Instances[0].TakenOverBy.String() != "198.51.100.12" {
			t.Errorf("drain JSON: %+v", res)
		}
	})

	t.Run("drain refused", func(t *testing.T) {
		code, out, errOut := opRun("drain", "--socket", sock, "--instance", "nope")
		if code != 1 || out != "" || errOut != "vipd drain: drain: no instance \"nope\"\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		code, _, errOut = opRun("drain", "--socket", sock, "--wait", "--timeout", "11m")
		if code != 1 || !strings.Contains(errOut, "timeout 11m0s is longer than the limit of 10m0s") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("undrain", func(t *testing.T) {
		code, out, errOut := opRun("undrain", "--socket", sock, "--instance", "ingress")
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		f.mu.Lock()
		got := f.undrains
		f.mu.Unlock()
		if len(got) != 1 || got[0] != "ingress" {
			t.Errorf("the daemon got undrains %q", got)
		}
		if _, ok := opLine(out, "ingress", "BACKUP", "undrained: back at the configured priority"); !ok {
			t.Errorf("stdout:\n%s", out)
		}
	})

	t.Run("reload", func(t *testing.T) {
		f.setReload(control.ReloadResult{OK: true, Changes: []string{"k8s-api: priority 150 -> 160"}}, nil)
		code, out, errOut := opRun("reload", "--socket", sock)
		if code != 0 || errOut != "" || out != "reloaded: 1 change\n  k8s-api: priority 150 -> 160\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		f.setReload(control.ReloadResult{OK: true}, nil)
		if code, out, _ := opRun("reload", "--socket", sock); code != 0 || out != "reloaded: no changes\n" {
			t.Errorf("no changes: exit %d, stdout %q", code, out)
		}
	})

	t.Run("reload refused", func(t *testing.T) {
		problems := []string{
			`/etc/vipd/vipd.toml:7: instance "k8s-api": vrid 300 out of range 1..255`,
			`/etc/vipd/vipd.toml:8: instance "k8s-api": unknown key "priorty" (did you mean "priority"?)`,
		}
		f.setReload(control.ReloadResult{Problems: problems}, errors.New("configuration refused; the running one is kept"))
		code, out, errOut := opRun("reload", "--socket", sock)
		want := "reload refused; the daemon keeps running its previous configuration\n  " + strings.Join(problems, "\n  ") + "\n"
		if code != 1 || out != "" || errOut != want {
			t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out, errOut, want)
		}
	})

	t.Run("socket from --config", func(t *testing.T) {
		cfg := writeConfig(t, strings.Replace(goodConfig, "/run/vipd/test.sock", sock, 1))
		if code, out, errOut := opRun("status", "--config", cfg); code != 0 || !strings.Contains(out, "k8s-api") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
}

func TestCLIControlCommandsErrors(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none.sock")
	for _, cmd := range []string{"status", "history", "drain", "undrain", "reload"} {
		code, out, errOut := opRun(cmd, "--socket", none)
		if code != exitNotRunning || out != "" || !strings.HasPrefix(errOut, "vipd "+cmd+": no daemon answers on "+none) {
			t.Errorf("%s without a daemon: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
	}
	for _, args := range [][]string{
		{"status", "extra"},
		{"history", "--instance", "lab"}, // only drain and undrain name instances
		{"undrain", "--wait"},            // only drain waits
		{"drain", "--timeout", "soon"},
		{"reload", "--bogus"},
	} {
		code, out, errOut := opRun(args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want usage error 2", args, code, out, errOut)
		}
	}
}

// ---------------------------------------------------------------------------
// Helpers for the lab tests.

// opIdleCluster is a lab of n nodes whose vipd daemons the test starts itself
// (with startVipd), in the order and with the configuration it needs.
func opIdleCluster(t *testing.T, interval time.Duration, n int, prios ...int) *cluster {
	t.Helper()
	kinds := make([]lab.DaemonKind, n)
	c := newCluster(t, interval, kinds...)
	for i := range c.kinds {
		c.kinds[i] = lab.Vipd
	}
	if len(prios) > 0 {
		c.group.Priorities = prios
	}
	return c
}

// startVipd starts node i's vipd; edit, if set, rewrites its config.
func (c *cluster) opStartVipd(i int, edit func([]byte) []byte) {
	c.t.Helper()
	spec := c.spec(i)
	if edit != nil {
		spec.Config = func(_ int, b []byte) []byte { return edit(b) }
	}
	c.startSpec(i, spec)
}

// opWithGlobal adds lines to a generated config's [global] table.
func opWithGlobal(lines string) func([]byte) []byte {
	return func(b []byte) []byte {
		return bytes.Replace(b, []byte("[global]\n"), []byte("[global]\n"+lines), 1)
	}
}

func (c *cluster) opSock(i int) string {
	return filepath.Join(filepath.Dir(c.daemons[i].ConfigPath()), "vipd.sock")
}

type opCLIResult struct {
	code           int
	stdout, stderr string
}

func (r opCLIResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%sstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cli runs the vipd binary with args against node i's control socket.
func (c *cluster) opCLI(i int, args ...string) opCLIResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, vipdBinary, append(args, "--socket", c.opSock(i))...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := opCLIResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		c.t.Fatalf("vipd %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// status is node i's one instance, from `vipd status --json`.
func (c *cluster) opStatus(i int) control.InstanceStatus {
	c.t.Helper()
	r := c.opCLI(i, "status", "--json")
	var sts []control.InstanceStatus
	if err := json.Unmarshal([]byte(r.stdout), &sts); r.code != 0 || err != nil || len(sts) != 1 {
		c.t.Fatalf("n%d: vipd status --json: %v (want one instance)\n%v", i, err, r)
	}
	return sts[0]
}

// history is node i's history, from `vipd history --json`.
func (c *cluster) opHistory(i int) []control.Transition {
	c.t.Helper()
	r := c.opCLI(i, "history", "--json")
	var ts []control.Transition
	if err := json.Unmarshal([]byte(r.stdout), &ts); r.code != 0 || err != nil {
		c.t.Fatalf("n%d: vipd history --json: %v\n%v", i, err, r)
	}
	return ts
}

// waitStatus polls node i's status until cond holds.
func (c *cluster) opWaitStatus(i int, what string, cond func(control.InstanceStatus) bool) control.InstanceStatus {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		// Until the daemon listens, or while it answers otherwise, try again.
		r := c.opCLI(i, "status", "--json")
		var sts []control.InstanceStatus
		err := json.Unmarshal([]byte(r.stdout), &sts)
		if r.code == 0 && err == nil && len(sts) == 1 && cond(sts[0]) {
			return sts[0]
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("n%d: waiting for %s; last status:\n%v", i, what, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLine waits for a line of node i's current daemon that contains every
// part and was written at or after since.
func (c *cluster) opWaitLine(i int, since time.Time, timeout time.Duration, parts ...string) (lab.LogLine, bool) {
	deadline := time.Now().Add(timeout)
	for {
		for _, l := range c.daemons[i].Lines(since) {
			ok := true
			for _, p := range parts {
				if !strings.Contains(l.Text, p) {
					ok = false
					break
				}
			}
			if ok {
				return l, true
			}
		}
		if time.Now().After(deadline) {
			return lab.LogLine{}, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// vipMoves lists the VIP's address events from the monitor since from, as
// "+n2" (added on n2) and "-n1" (removed from n1).
func (c *cluster) opVIPMoves(from time.Time) []string {
	var out []string
	for _, ev := range c.mon.Events(from, time.Time{}) {
		switch ev.Kind {
		case lab.VIPAdded:
			out = append(out, fmt.Sprintf("+n%d", ev.Node))
		case lab.VIPRemoved:
			out = append(out, fmt.Sprintf("-n%d", ev.Node))
		}
	}
	return out
}

// vipEvent is the time of the first event of kind on node since from.
func (c *cluster) opVIPEvent(kind lab.EventKind, node int, from time.Time) (time.Time, bool) {
	for _, ev := range c.mon.Events(from, time.Time{}) {
		if ev.Kind == kind && ev.Node == node {
			return ev.At, true
		}
	}
	return time.Time{}, false
}

// startProbing starts the 1 ms ICMP prober on the VIP and waits until the
// answers flow.
func (c *cluster) opStartProbing() *lab.Prober {
	c.t.Helper()
	c.pingUntil(10 * time.Second)
	p, err := c.l.StartProber(context.Background(), c.group.VIP.Addr(), time.Millisecond)
	if err != nil {
		c.t.Fatalf("prober: %v", err)
	}
	c.t.Cleanup(p.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for !p.Flowing(200*time.Millisecond, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the VIP does not answer the prober steadily (%d answers to %d probes)", p.AnsweredSince(time.Time{}), p.Sent())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// waitAnswers waits until the prober has answers again after t.
func (c *cluster) opWaitAnswers(p *lab.Prober, t time.Time) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.AnsweredSince(t) < 50 {
		if time.Now().After(deadline) {
			c.t.Fatalf("the VIP does not answer the client again (last answer %v)", p.LastAnswer().Format(time.StampMicro))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------
// Lab tests.

func TestLabOperateStatusAndHistoryAfterFailover(t *testing.T) {
	c := newCluster(t, 100*time.Millisecond, vipdOnly(2)...)
	c.waitOnlyHolder(1)
	c.opWaitStatus(2, "n2 in BACKUP hearing n1", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address.String() == "198.51.100.11"
	})

	r := c.opCLI(1, "status")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("n1 status: %v", r)
	}
	if _, ok := opLine(r.stdout, "lab", "MASTER", "150", "198.51.100.11 (us)", "198.51.100.10 held"); !ok {
		t.Errorf("n1 status does not show it holding the VIP:\n%s", r.stdout)
	}
	r = c.opCLI(2, "status")
	if _, ok := opLine(r.stdout, "lab", "BACKUP", "100", "198.51.100.11", "198.51.100.10"); r.code != 0 || !ok {
		t.Errorf("n2 status:\n%v", r)
	}
	if _, ok := opLine(r.stdout, "master", "198.51.100.11 priority 150, adverts every 100ms"); !ok {
		t.Errorf("n2 status has no detail about the master:\n%s", r.stdout)
	}

	// Fail n1: n2 takes over because n1's adverts stop.
	if err := c.l.CutLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitFor("n2 holding the VIP", 20*time.Second, func(s lab.State) bool { return s.Holds(2) })

	r = c.opCLI(2, "history")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("n2 history: %v", r)
	}
	if _, ok := opLine(r.stdout, "lab", "INITIALIZE -> BACKUP"); !ok {
		t.Errorf("n2 history lacks its start:\n%s", r.stdout)
	}
	if _, ok := opLine(r.stdout, "lab", "BACKUP -> MASTER", "no advert from 198.51.100.11"); !ok {
		t.Errorf("n2 history lacks the takeover with its cause:\n%s", r.stdout)
	}
	ts := c.opHistory(2)
	last := ts[len(ts)-1]
	if last.Instance != "lab" || last.From != control.StateBackup || last.To != control.StateMaster ||
		last.Reason != "master_down" || !strings.Contains(last.Cause, "no advert from 198.51.100.11") {
		t.Errorf("n2's last transition: %+v", last)
	}

	st := c.opWaitStatus(2, "n2 MASTER holding the VIP", func(st control.InstanceStatus) bool {
		return st.State == control.StateMaster && st.VIPsHeld
	})
	if st.LastTransition == nil || st.LastTransition.Reason != "master_down" || st.Transitions != uint64(len(ts)) {
		t.Errorf("n2 status: last transition %+v, %d transitions (history has %d)", st.LastTransition, st.Transitions, len(ts))
	}
	if st.Master.Address.String() != "198.51.100.12" || st.Counters.AdvertsSent == 0 {
		t.Errorf("n2 status: master %v, adverts sent %d", st.Master.Address, st.Counters.AdvertsSent)
	}
	r = c.opCLI(2, "status")
	if _, ok := opLine(r.stdout, "lab", "MASTER", "198.51.100.12 (us)", "198.51.100.10 held", "no advert from 198.51.100.11"); !ok {
		t.Errorf("n2 status after the failover:\n%s", r.stdout)
	}
}

func TestLabOperateDrainSurvivesRestart(t *testing.T) {
	interval := 100 * time.Millisecond
	c := newCluster(t, interval, vipdOnly(2)...)
	c.waitOnlyHolder(1)
	c.opWaitStatus(2, "n2 in BACKUP hearing n1", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address.String() == "198.51.100.11"
	})
	p := c.opStartProbing()

	start := time.Now()
	r := c.opCLI(1, "drain", "--instance", "lab", "--wait", "--timeout", "10s", "--note", "kernel upgrade")
	returned := time.Now()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("drain --wait: %v", r)
	}
	if _, ok := opLine(r.stdout, "lab", "BACKUP", "198.51.100.12", "198.51.100.12 took over (priority 100)"); !ok {
		t.Errorf("drain --wait does not name the taker:\n%s", r.stdout)
	}
	c.waitOnlyHolder(2)
	c.opWaitAnswers(p, returned)
	gap := p.LongestGap(start, time.Now())
	skew := lab.SkewTime(c.group.Priority(2), interval)
	removed, _ := c.opVIPEvent(lab.VIPRemoved, 1, start)
	added, _ := c.opVIPEvent(lab.VIPAdded, 2, start)
	t.Logf("drain: the client's longest gap %v (last answer before it %v after the drain command started); Skew_Time(%d) at %v is %v; VIP off n1 to on n2 %v; drain --wait returned after %v; prober's longest send gap %v",
		gap.Len.Round(time.Microsecond), gap.After.Recv.Sub(start).Round(time.Millisecond), c.group.Priority(2), interval, skew,
		added.Sub(removed).Round(time.Microsecond), returned.Sub(start).Round(time.Millisecond), p.LongestSendGap(start, time.Now()).Round(time.Microsecond))
	if !c.waitLog(2, "to=MASTER", "reason=master_left", "priority 0 from master 198.51.100.11") {
		t.Error("n2's takeover does not say n1 released")
	}
	if !c.waitLog(1, "from=MASTER", "to=BACKUP", "reason=resigned", "drained by operator: kernel upgrade") {
		t.Error("n1's log does not show the drain with its note")
	}

	st := c.opStatus(1)
	if !st.Drained || !strings.Contains(st.DrainNote, "kernel upgrade") || !strings.Contains(st.DrainNote, "(by uid 0") ||
		st.State != control.StateBackup || st.Priority.Effective != 1 || st.Priority.Base != 150 {
		t.Errorf("n1 after the drain: drained %v (%q), state %s, priority %d/%d", st.Drained, st.DrainNote, st.State, st.Priority.Base, st.Priority.Effective)
	}
	r = c.opCLI(1, "status")
	if _, ok := opLine(r.stdout, "lab", "BACKUP (drained)", "150-149=1"); !ok {
		t.Errorf("n1 status does not show the drain:\n%s", r.stdout)
	}
	if _, ok := opLine(r.stdout, "drained", "kernel upgrade (by uid 0"); !ok {
		t.Errorf("n1 status does not show the drain note:\n%s", r.stdout)
	}

	// Restart the drained node, preferred (150 > 100) as it is: the drain
	// kept in its state_dir must keep the VIP away.
	if err := c.daemons[1].Stop(5 * time.Second); err != nil {
		t.Fatalf("stop n1: %v", err)
	}
	restarted := time.Now()
	c.start(1)
	if _, ok := c.opWaitLine(1, restarted, 10*time.Second, "instance is drained (kept from an earlier run)", "kernel upgrade"); !ok {
		t.Error("n1 does not say at start-up that it is still drained")
	}
	st = c.opWaitStatus(1, "n1 in BACKUP after the restart", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address.String() == "198.51.100.12"
	})
	if !st.Drained || st.Priority.Effective != 1 || !strings.Contains(st.DrainNote, "kernel upgrade") {
		t.Errorf("n1 after the restart: drained %v (%q), priority %d", st.Drained, st.DrainNote, st.Priority.Effective)
	}
	// Many Master_Down_Intervals: n1 would have preempted long since.
	time.Sleep(8 * lab.MasterDownInterval(c.group.Priority(1), interval))
	if s := c.mon.State(); s.OnlyHolder() != 2 {
		t.Errorf("holders %v after n1's restart, want n2 alone", s.Holders)
	}
	if n := c.mon.AdvertsFrom(1, restarted, time.Now()); n != 0 {
		t.Errorf("the drained n1 sent %d adverts after its restart", n)
	}
	// Make-before-break: n2 adds the VIP before n1 removes it. The monitor
	// stamps each node's address events when it reads them, one reader per
	// namespace, so on a loaded machine two events a few hundred µs apart
	// can come out the other way round. n1's own report settles it: it
	// removed the VIP sooner after n2's first advert than
	// announce.SuccessorAnnounceWait, so on n2's announcement, which n2
	// sends once its add is done. With that, an inversion under
	// monitorInversion is the monitor's, not the daemons'.
	moves := strings.Join(c.opVIPMoves(start), " ")
	held, onAnnouncement := c.handoverBothHeld(1)
	onAnnouncement = onAnnouncement && held < announce.SuccessorAnnounceWait
	inverted := moves == "-n1 +n2" && added.Sub(removed) < monitorInversion && onAnnouncement
	if inverted {
		t.Logf("the monitor read n2's add %v after n1's removal; n1 removed %v after n2's first advert, on its announcement", added.Sub(removed), held)
	}
	if moves != "+n2 -n1" && !inverted {
		t.Errorf("the VIP moved %v since the drain, want exactly once, n1 to n2, n2 first", moves)
	}
	t.Logf("drained n1 restarted; %v later the VIP has not come back (%d answers to the client since)",
		time.Since(restarted).Round(time.Millisecond), p.AnsweredSince(restarted))

	// Undrained, the preferred node takes the VIP back (150 > 100): the
	// drain was all that kept it away.
	undrained := time.Now()
	r = c.opCLI(1, "undrain", "--instance", "lab")
	if _, ok := opLine(r.stdout, "lab", "undrained: back at the configured priority"); r.code != 0 || !ok {
		t.Errorf("undrain: %v", r)
	}
	c.waitOnlyHolder(1)
	c.opWaitAnswers(p, time.Now())
	if st := c.opStatus(1); st.Drained || st.Priority.Effective != 150 {
		t.Errorf("n1 after undrain: drained %v, priority %d", st.Drained, st.Priority.Effective)
	}
	t.Logf("undrain of the preferred node: it preempted back; the client's longest gap %v", p.LongestGap(undrained, time.Now()).Len.Round(time.Microsecond))
}

func TestLabOperateUndrainEqualPrioritiesKeepsVIP(t *testing.T) {
	interval := 100 * time.Millisecond
	// Equal priorities; n2 starts first and holds the VIP. n2 has the
	// higher address, so only the rule that an equal Backup never preempts
	// keeps the VIP on n1 after n2's undrain.
	c := opIdleCluster(t, interval, 2, 100, 100)
	c.opStartVipd(2, nil)
	c.waitOnlyHolder(2)
	c.opStartVipd(1, nil)
	c.opWaitStatus(1, "n1 in BACKUP hearing n2", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address.String() == "198.51.100.12"
	})
	p := c.opStartProbing()

	start := time.Now()
	r := c.opCLI(2, "drain", "--wait", "--timeout", "10s")
	if _, ok := opLine(r.stdout, "lab", "BACKUP", "198.51.100.11"); r.code != 0 || !ok {
		t.Fatalf("drain --wait (every instance): %v", r)
	}
	c.waitOnlyHolder(1)
	c.opWaitAnswers(p, time.Now())
	t.Logf("drain with equal priorities: the client's longest gap %v; Skew_Time(100) at %v is %v",
		p.LongestGap(start, time.Now()).Len.Round(time.Microsecond), interval, lab.SkewTime(100, interval))

	undrained := time.Now()
	r = c.opCLI(2, "undrain")
	if _, ok := opLine(r.stdout, "lab", "BACKUP", "undrained"); r.code != 0 || r.stderr != "" || !ok {
		t.Fatalf("undrain: %v", r)
	}
	st := c.opWaitStatus(2, "n2 undrained at priority 100", func(st control.InstanceStatus) bool {
		return !st.Drained && st.Priority.Effective == 100
	})
	time.Sleep(8 * lab.MasterDownInterval(100, interval))
	st = c.opStatus(2)
	if st.State != control.StateBackup || st.Master.Address.String() != "198.51.100.11" || st.Drained {
		t.Errorf("n2 after undrain: %s, master %v, drained %v", st.State, st.Master.Address, st.Drained)
	}
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Errorf("holders %v after the undrain, want n1 alone", s.Holders)
	}
	// Make-before-break: n1 adds the VIP before n2 removes it. The lab
	// stamps each namespace's address events in its own goroutine, so under
	// load two events a few milliseconds apart may be stamped out of order:
	// n2's own account (it removes only once it has seen n1 take over) and
	// an inversion shorter than the stamping's jitter are accepted.
	moves := c.opVIPMoves(start)
	added, _ := c.opVIPEvent(lab.VIPAdded, 1, start)
	removed, _ := c.opVIPEvent(lab.VIPRemoved, 2, start)
	switch joined := strings.Join(moves, " "); {
	case joined == "+n1 -n2":
	case joined == "-n2 +n1" && added.Sub(removed) < monitorStampJitter && c.logHas(2, "handover done: the successor took over"):
		t.Logf("the lab stamped n2's removal %v before n1's add; n2 logged the successor's takeover first", added.Sub(removed).Round(time.Microsecond))
	default:
		t.Errorf("the VIP moved %v since the drain, want exactly once, n2 to n1, n1 first", moves)
	}
	if n := c.mon.AdvertsFrom(2, undrained.Add(50*time.Millisecond), time.Now()); n != 0 {
		t.Errorf("n2 sent %d adverts after its undrain", n)
	}
	if gap := p.LongestGap(undrained, time.Now()); gap.Len > 0 {
		t.Logf("after the undrain the client's longest gap was %v (the prober's longest send gap %v)",
			gap.Len.Round(time.Microsecond), p.LongestSendGap(undrained, time.Now()).Round(time.Microsecond))
	}
	if path := filepath.Join(filepath.Dir(c.daemons[2].ConfigPath()), "state", "drained", "lab.json"); opFileExists(path) {
		t.Errorf("the drain mark %s is still there after undrain", path)
	}
}

// monitorStampJitter bounds how far apart the lab may stamp two address
// events of different namespaces out of their order.
const monitorStampJitter = 5 * time.Millisecond

func opFileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// opStatusKey is what must not change in a status when nothing happened:
// everything but the counters and the times of the last adverts.
func opStatusKey(t *testing.T, st control.InstanceStatus) string {
	t.Helper()
	st.Counters = control.Counters{}
	st.Master.LastSeen = time.Time{}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLabOperateReloadBadConfigChangesNothing(t *testing.T) {
	c := newCluster(t, 100*time.Millisecond, vipdOnly(2)...)
	c.waitOnlyHolder(1)
	c.opWaitStatus(2, "n2 in BACKUP hearing n1", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address.String() == "198.51.100.11"
	})
	path := c.daemons[1].ConfigPath()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before1, before2 := opStatusKey(t, c.opStatus(1)), opStatusKey(t, c.opStatus(2))
	hist1 := len(c.opHistory(1))

	// Two problems: the VRID out of range and a misspelt key, each with its
	// line in the file.
	bad := strings.Replace(string(good), "vrid = 51\n", "vrid = 300\npriorty = 1\n", 1)
	lines := strings.Split(bad, "\n")
	lineOf := func(prefix string) int {
		for k, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return k + 1
			}
		}
		t.Fatalf("no %q in the config", prefix)
		return 0
	}
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	r := c.opCLI(1, "reload")
	if r.code != 1 || r.stdout != "" {
		t.Errorf("reload of a bad file: %v", r)
	}
	for _, want := range []string{
		"reload refused; the daemon keeps running its previous configuration\n",
		fmt.Sprintf("  %s:%d: instance \"lab\": vrid 300 out of range 1..255\n", path, lineOf("vrid = ")),
		fmt.Sprintf("  %s:%d: instance \"lab\": unknown key \"priorty\" (did you mean \"priority\"?)\n", path, lineOf("priorty = ")),
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// The same through SIGHUP: refused in the log, nothing changed.
	if err := c.daemons[1].Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.opWaitLine(1, from, 10*time.Second, "reload refused: keeping the running configuration", fmt.Sprintf("%s:%d", path, lineOf("vrid = "))); !ok {
		t.Error("n1's log does not refuse the SIGHUP reload with the problem's line")
	}
	time.Sleep(5 * lab.MasterDownInterval(100, 100*time.Millisecond))

	if after := opStatusKey(t, c.opStatus(1)); after != before1 {
		t.Errorf("n1's status changed after the refused reload:\nbefore %s\nafter %s", before1, after)
	}
	if after := opStatusKey(t, c.opStatus(2)); after != before2 {
		t.Errorf("n2's status changed after the refused reload:\nbefore %s\nafter %s", before2, after)
	}
	if n := len(c.opHistory(1)); n != hist1 {
		t.Errorf("n1's history grew from %d to %d", hist1, n)
	}
	if moves := c.opVIPMoves(from); len(moves) != 0 {
		t.Errorf("the VIP moved after the refused reload: %v", moves)
	}
	if s := c.mon.State(); s.OnlyHolder() != 1 || s.Advertiser != 1 || s.AdvertPriority != 150 {
		t.Errorf("after the refused reload: holders %v, advertiser n%d at priority %d", s.Holders, s.Advertiser, s.AdvertPriority)
	}

	// The file fixed again: the reload is accepted and changes nothing.
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	// (The daemon reports "no changes" as one change, so the CLI prints
	// "reloaded: 1 change" above it; only the words are checked here.)
	r = c.opCLI(1, "reload")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "reloaded: ") || !strings.Contains(r.stdout, "no changes\n") || r.stderr != "" {
		t.Errorf("reload of the original file: %v", r)
	}
}

func TestLabOperateReloadPriorityKeepsVIP(t *testing.T) {
	interval := 100 * time.Millisecond
	c := newCluster(t, interval, vipdOnly(2)...)
	c.waitOnlyHolder(1)
	c.opWaitStatus(2, "n2 in BACKUP hearing n1", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address.String() == "198.51.100.11"
	})
	p := c.opStartProbing()
	hist1, hist2 := len(c.opHistory(1)), len(c.opHistory(2))
	changes1, changes2 := c.countLog(1, "state changed"), c.countLog(2, "state changed")

	path := c.daemons[1].ConfigPath()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("\npriority = 150\n")) {
		t.Fatalf("n1's config has no priority 150:\n%s", b)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte("\npriority = 150\n"), []byte("\npriority = 160\n"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	r := c.opCLI(1, "reload")
	if r.code != 0 || r.stderr != "" || r.stdout != "reloaded: 1 change\n  lab: priority 150 -> 160\n" {
		t.Errorf("reload: %v", r)
	}
	// The Master announces its new priority at once.
	c.waitFor("n1 advertising priority 160", 10*time.Second, func(s lab.State) bool {
		return s.Advertiser == 1 && s.AdvertPriority == 160
	})
	st := c.opStatus(1)
	if st.Priority.Base != 160 || st.Priority.Effective != 160 || st.State != control.StateMaster || !st.VIPsHeld {
		t.Errorf("n1 after the reload: %s, priority %d/%d, held %v", st.State, st.Priority.Base, st.Priority.Effective, st.VIPsHeld)
	}
	c.opWaitStatus(2, "n2 seeing the master at 160", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Priority == 160
	})
	time.Sleep(5 * lab.MasterDownInterval(100, interval))

	if moves := c.opVIPMoves(from); len(moves) != 0 {
		t.Errorf("the VIP moved during the reload: %v", moves)
	}
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Errorf("holders %v after the reload", s.Holders)
	}
	if n1, n2 := len(c.opHistory(1)), len(c.opHistory(2)); n1 != hist1 || n2 != hist2 {
		t.Errorf("history grew: n1 %d -> %d, n2 %d -> %d", hist1, n1, hist2, n2)
	}
	if n1, n2 := c.countLog(1, "state changed"), c.countLog(2, "state changed"); n1 != changes1 || n2 != changes2 {
		t.Errorf("state changes in the logs: n1 %d -> %d, n2 %d -> %d", changes1, n1, changes2, n2)
	}
	if !c.waitLog(1, "configuration reloaded", "lab: priority 150 -> 160") {
		t.Error("n1's log does not record the reload")
	}
	t.Logf("reload of the master's priority: the client's longest gap %v over %v (1 ms probes; the prober's longest send gap %v)",
		p.LongestGap(from, time.Now()).Len.Round(time.Microsecond), time.Since(from).Round(time.Millisecond),
		p.LongestSendGap(from, time.Now()).Round(time.Microsecond))
}

// opExchange speaks the control protocol by hand: raw is sent as is, then
// the write side is closed, and the one response is decoded.
func opExchange(t *testing.T, path, raw string) (control.Response, string) {
	t.Helper()
	conn, err := net.DialTimeout("unix", path, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the answer to %q: %v (got %q)", raw, err, line)
	}
	var resp control.Response
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		t.Fatalf("answer to %q is not JSON: %v: %q", raw, err, line)
	}
	return resp, line
}

func TestLabOperateControlProtocol(t *testing.T) {
	c := newCluster(t, 100*time.Millisecond, vipdOnly(1)...)
	c.waitOnlyHolder(1)
	sock := c.opSock(1)

	resp, line := opExchange(t, sock, `{"command":"status"}`+"\n")
	var sts []control.InstanceStatus
	if err := json.Unmarshal(resp.Result, &sts); !resp.OK || err != nil || len(sts) != 1 || sts[0].Name != "lab" || sts[0].State != control.StateMaster {
		t.Errorf("status: %v: %s", err, line)
	}
	// No newline, as `printf ... | socat` sends it: the end of input ends
	// the request.
	resp, line = opExchange(t, sock, `{"command":"history","args":{}}`)
	var ts []control.Transition
	if err := json.Unmarshal(resp.Result, &ts); !resp.OK || err != nil || len(ts) == 0 {
		t.Errorf("history without a newline: %v: %s", err, line)
	}

	for _, tt := range []struct{ raw, want string }{
		{"not json\n", "malformed request"},
		{`{"command":"frobnicate"}` + "\n", `unknown command "frobnicate" (commands: status, history, drain, undrain, reload)`},
		{`{}` + "\n", "malformed request: no command"},
		{`{"command":"status","verbose":true}` + "\n", `unknown field "verbose"`},
		{`{"command":"status"} {"command":"reload"}` + "\n", "more than one JSON value"},
		// A typo must not turn into a drain of every instance.
		{`{"command":"drain","args":{"instnace":"lab"}}` + "\n", `drain: bad args: json: unknown field "instnace"`},
		{`{"command":"drain","args":{"instance":"nope"}}` + "\n", `"nope"`},
		{`{"command":"drain","args":{"instance":"lab","wait":true,"timeout":"11m"}}` + "\n", "longer than the limit"},
		{`{"command":"drain","args":{"instance":"lab","timeout":-5}}` + "\n", "negative timeout"},
		{`{"command":"undrain","args":{"instance":"lab","note":"x"}}` + "\n", `unknown field "note"`},
		{"\n", "malformed request"},
	} {
		resp, line := opExchange(t, sock, tt.raw)
		if resp.OK || !strings.Contains(resp.Error, tt.want) {
			t.Errorf("%q: answer %s, want an error containing %q", tt.raw, strings.TrimSpace(line), tt.want)
		}
	}
	if st := c.opStatus(1); st.Drained || st.State != control.StateMaster {
		t.Errorf("after the refused requests n1 is %s, drained %v", st.State, st.Drained)
	}
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Errorf("holders %v after the refused requests", s.Holders)
	}

	// A refused reload answers ok=false with the problems and the result.
	path := c.daemons[1].ConfigPath()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(good, []byte("vrid = 51\n"), []byte("vrid = 0\n"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, line = opExchange(t, sock, `{"command":"reload"}`+"\n")
	var rr control.ReloadResult
	if err := json.Unmarshal(resp.Result, &rr); resp.OK || err != nil || rr.OK || len(resp.Problems) != 1 ||
		!strings.HasPrefix(resp.Problems[0], path+":") || len(rr.Problems) != 1 || rr.Problems[0] != resp.Problems[0] {
		t.Errorf("refused reload: %v: %s", err, line)
	}
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	resp, line = opExchange(t, sock, `{"command":"reload"}`+"\n")
	// Nothing changed: [] or, as the daemon says it now, ["no changes"].
	if err := json.Unmarshal(resp.Result, &rr); !resp.OK || err != nil || !rr.OK || len(rr.Changes) > 1 || len(rr.Changes) == 1 && rr.Changes[0] != "no changes" {
		t.Errorf("reload: %v: %s", err, line)
	}
}

// scrape fetches node i's /metrics from inside its network namespace, where
// the daemon listens on 127.0.0.1:9650, and parses it.
func (c *cluster) opScrape(i int) map[string]*dto.MetricFamily {
	c.t.Helper()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := lab.RunInNetns(c.l.NodeNetns(i), func() error {
			var d net.Dialer
			var err error
			conn, err = d.DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
	client := &http.Client{
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true},
		Timeout:   20 * time.Second,
	}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(20 * time.Second)
	for {
		fams, err := func() (map[string]*dto.MetricFamily, error) {
			resp, err := client.Get("http://127.0.0.1:9650/metrics")
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("HTTP %s", resp.Status)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				return nil, fmt.Errorf("content type %q", ct)
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			return p.TextToMetricFamilies(resp.Body)
		}()
		if err == nil {
			return fams
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("n%d: scraping /metrics: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// opMetricValue is the value of the series of name whose labels include
// labels.
func opMetricValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		match := true
		for k, v := range labels {
			if have[k] != v {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

func TestLabOperateMetrics(t *testing.T) {
	c := opIdleCluster(t, 100*time.Millisecond, 2)
	// The same address in each node's namespace: each has its own loopback.
	// n1 first, so that the transition counts below are exact.
	metricsListen := opWithGlobal("metrics_listen = \"127.0.0.1:9650\"\n")
	c.opStartVipd(1, metricsListen)
	c.waitOnlyHolder(1)
	c.opStartVipd(2, metricsListen)
	c.opWaitStatus(2, "n2 in BACKUP hearing n1", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address.String() == "198.51.100.11"
	})

	lab1 := map[string]string{"vrrp_instance": "lab"}
	with := func(k, v string) map[string]string {
		m := map[string]string{"vrrp_instance": "lab"}
		m[k] = v
		return m
	}
	m1 := c.opScrape(1)
	for _, tt := range []struct {
		name   string
		labels map[string]string
		want   func(float64) bool
		what   string
	}{
		{"vipd_instance_state", with("state", "MASTER"), func(v float64) bool { return v == 1 }, "1"},
		{"vipd_instance_state", with("state", "BACKUP"), func(v float64) bool { return v == 0 }, "0"},
		{"vipd_instance_info", map[string]string{"vrrp_instance": "lab", "interface": "eth0", "vrid": "51"}, func(v float64) bool { return v == 1 }, "1"},
		{"vipd_adverts_sent_total", lab1, func(v float64) bool { return v > 0 }, "> 0"},
		{"vipd_transitions_total", map[string]string{"vrrp_instance": "lab", "from": "BACKUP", "to": "MASTER"}, func(v float64) bool { return v >= 1 }, ">= 1"},
		{"vipd_priority_base", lab1, func(v float64) bool { return v == 150 }, "150"},
		{"vipd_priority_effective", lab1, func(v float64) bool { return v == 150 }, "150"},
		{"vipd_vip_held", lab1, func(v float64) bool { return v == 1 }, "1"},
		{"vipd_drained", lab1, func(v float64) bool { return v == 0 }, "0"},
		{"vipd_garp_sent_total", lab1, func(v float64) bool { return v >= 1 }, ">= 1"},
		{"go_goroutines", nil, func(v float64) bool { return v > 0 }, "> 0"},
		{"process_resident_memory_bytes", nil, func(v float64) bool { return v > 0 }, "> 0"},
	} {
		v, ok := opMetricValue(m1, tt.name, tt.labels)
		if !ok {
			t.Errorf("n1: no %s%v", tt.name, tt.labels)
		} else if !tt.want(v) {
			t.Errorf("n1: %s%v = %v, want %s", tt.name, tt.labels, v, tt.what)
		}
	}
	if f := m1["vipd_transitions_total"]; f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("vipd_transitions_total is a %v", f.GetType())
	}
	if f := m1["vipd_instance_state"]; f.GetType() != dto.MetricType_GAUGE || len(f.GetMetric()) != 4 {
		t.Errorf("vipd_instance_state: a %v with %d series, want a gauge with one per state", f.GetType(), len(f.GetMetric()))
	}

	m2 := c.opScrape(2)
	if v, ok := opMetricValue(m2, "vipd_instance_state", with("state", "BACKUP")); !ok || v != 1 {
		t.Errorf("n2: vipd_instance_state{state=BACKUP} = %v (%v), want 1", v, ok)
	}
	if v, ok := opMetricValue(m2, "vipd_adverts_received_total", lab1); !ok || v == 0 {
		t.Errorf("n2: vipd_adverts_received_total = %v (%v), want > 0", v, ok)
	}
	if v, ok := opMetricValue(m2, "vipd_master_priority_seen", lab1); !ok || v != 150 {
		t.Errorf("n2: vipd_master_priority_seen = %v (%v), want 150", v, ok)
	}
	sent1, _ := opMetricValue(m1, "vipd_adverts_sent_total", lab1)
	recv2, _ := opMetricValue(m2, "vipd_adverts_received_total", lab1)
	t.Logf("n1 sent %v adverts, n2 received %v; n1 runs %v goroutines", sent1, recv2, opMust(opMetricValue(m1, "go_goroutines", nil)))

	// After a drain the counters and states follow.
	if r := c.opCLI(1, "drain", "--wait", "--timeout", "10s"); r.code != 0 {
		t.Fatalf("drain: %v", r)
	}
	c.waitOnlyHolder(2)
	m1, m2 = c.opScrape(1), c.opScrape(2)
	for _, tt := range []struct {
		fams   map[string]*dto.MetricFamily
		node   int
		name   string
		labels map[string]string
		want   float64
	}{
		{m1, 1, "vipd_instance_state", with("state", "BACKUP"), 1},
		{m1, 1, "vipd_drained", lab1, 1},
		{m1, 1, "vipd_priority_effective", lab1, 1},
		{m1, 1, "vipd_vip_held", lab1, 0},
		{m1, 1, "vipd_transitions_total", map[string]string{"vrrp_instance": "lab", "from": "MASTER", "to": "BACKUP"}, 1},
		{m2, 2, "vipd_instance_state", with("state", "MASTER"), 1},
		{m2, 2, "vipd_transitions_total", map[string]string{"vrrp_instance": "lab", "from": "BACKUP", "to": "MASTER"}, 1},
	} {
		if v, ok := opMetricValue(tt.fams, tt.name, tt.labels); !ok || v != tt.want {
			t.Errorf("after the drain, n%d: %s%v = %v (%v), want %v", tt.node, tt.name, tt.labels, v, ok, tt.want)
		}
	}
}

func opMust(v float64, _ bool) float64 { return v }

// netnsProcs lists the processes named comm in node i's namespace.
func (c *cluster) opNetnsProcs(i int, comm string) []int {
	c.t.Helper()
	out, err := exec.Command("ip", "netns", "pids", c.l.NodeNS(i)).Output()
	if err != nil {
		c.t.Fatalf("ip netns pids: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue // gone meanwhile
		}
		if strings.TrimSpace(string(b)) == comm {
			pids = append(pids, pid)
		}
	}
	return pids
}

// opLogTime is the time= attribute of a text log line: the daemon's own
// clock, so that two lines' distance is not the lab's reading delay.
func opLogTime(line string) (time.Time, bool) {
	m := regexp.MustCompile(`(?:^|\s)time=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	return at, err == nil
}

func TestLabOperateHangingHookIsKilled(t *testing.T) {
	c := opIdleCluster(t, 100*time.Millisecond, 2)
	hookOut := filepath.Join(t.TempDir(), "backup-hook.out")
	hooks := fmt.Sprintf("\n[instance.notify]\nmaster = [\"/bin/sleep\", \"1000\"]\nbackup = [\"/bin/sh\", \"-c\", %q]\ntimeout = \"500ms\"\n",
		"echo $VIPD_STATE $VIPD_PREVIOUS_STATE $VIPD_INSTANCE >> "+hookOut)
	started := time.Now()
	c.opStartVipd(1, func(b []byte) []byte { return append(b, hooks...) })
	c.opStartVipd(2, nil)
	c.waitOnlyHolder(1)

	// n1's master hook now hangs; the election must not wait for it. The
	// drain goes through the client in this process, the quickest way to
	// make n1 resign while its hook runs.
	drainAt := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := (&control.Client{Path: c.opSock(1)}).Drain(ctx, control.DrainRequest{Instance: "lab"}); err != nil {
		t.Fatalf("drain: %v", err)
	}
	sleeping := c.opNetnsProcs(1, "sleep")
	c.waitOnlyHolder(2)
	takenAt, _ := c.opVIPEvent(lab.VIPAdded, 2, drainAt)

	toMaster, ok1 := c.opWaitLine(1, started, 10*time.Second, "state changed", "to=MASTER")
	toBackup, ok2 := c.opWaitLine(1, drainAt, 10*time.Second, "state changed", "from=MASTER", "to=BACKUP")
	killed, ok3 := c.opWaitLine(1, started, 20*time.Second, "notify hook killed after its timeout", "event=master", "command=/bin/sleep", "timeout=500ms")
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("n1's log lacks: the MASTER transition %v, the drain %v, the hook killed at its timeout %v", ok1, ok2, ok3)
	}
	// The election went on while the hook hung: n1 resigned and n2 took
	// over before the hook was killed.
	if !toBackup.At.Before(killed.At) || !takenAt.Before(killed.At) {
		t.Errorf("n1 resigned at %v and n2 took over at %v, not before the hook was killed at %v",
			toBackup.At.Format(time.StampMicro), takenAt.Format(time.StampMicro), killed.At.Format(time.StampMicro))
	}
	if len(sleeping) == 0 {
		t.Error("no sleep process in n1's namespace while its master hook should be running")
	}
	// Killed at its timeout, not before: the daemon's own clock says how
	// long after the transition.
	if t0, ok := opLogTime(toMaster.Text); ok {
		if t1, ok := opLogTime(killed.Text); ok {
			ran := t1.Sub(t0)
			t.Logf("master hook killed %v after the transition (timeout 500ms); n2 took over %v after the drain request, %v before the kill",
				ran.Round(time.Millisecond), takenAt.Sub(drainAt).Round(time.Millisecond), killed.At.Sub(takenAt).Round(time.Millisecond))
			if ran < 490*time.Millisecond {
				t.Errorf("the hook was killed %v after it started, before its 500ms timeout", ran)
			}
		}
	}
	if pids := c.opNetnsProcs(1, "sleep"); len(pids) != 0 {
		t.Errorf("sleep still runs in n1's namespace after the kill: pids %v", pids)
	}

	// The backup hook, queued behind the hanging one, ran after the kill
	// with the transition in its environment.
	if _, ok := c.opWaitLine(1, drainAt, 10*time.Second, "notify hook done", "event=backup"); !ok {
		t.Error("n1's backup hook did not finish")
	}
	var got string
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(hookOut)
		got = string(b)
		if strings.Contains(got, "BACKUP MASTER lab\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got != "BACKUP INITIALIZE lab\nBACKUP MASTER lab\n" {
		t.Errorf("the backup hook wrote %q, want its start-up line and then BACKUP MASTER lab", got)
	}
	if !c.waitLog(2, "to=MASTER", "priority 0 from master 198.51.100.11") {
		t.Error("n2's takeover does not say n1 released")
	}
	c.pingUntil(5 * time.Second)
}

// handoverBothHeld is how long node i says it held the VIP after its
// successor was first heard, from its "handover done" line.
func (c *cluster) handoverBothHeld(i int) (time.Duration, bool) {
	b, _ := os.ReadFile(c.daemons[i].LogPath())
	all := regexp.MustCompile(`handover done: the successor took over.* both_held_for=(\S+)`).FindAllSubmatch(b, -1)
	if all == nil {
		return 0, false
	}
	d, err := time.ParseDuration(string(all[len(all)-1][1])) // the latest
	return d, err == nil
}
