package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vipd/vipd/control"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vipd.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodConfig = `[global]
socket = "/run/vipd/test.sock"

[[instance]]
name = "k8s-api"
interface = "eth0"
vrid = 51
priority = 150
vips = ["198.51.100.10"]
`

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantCode int
		wantOut  string   // on stdout, with FILE replaced by the path
		wantErr  []string // lines on stderr, with FILE replaced by the path
	}{
		{name: "ok", body: goodConfig, wantCode: 0, wantOut: "FILE: OK\n"},
		{
			name:     "the reference config",
			body:     mustRead(t, "../../packaging/vipd.toml"),
			wantCode: 0, wantOut: "FILE: OK\n",
		},
		{
			name:     "several problems with their lines",
			body:     strings.Replace(strings.Replace(goodConfig, "vrid = 51", "vrid = 300", 1), "priority = 150", "priorty = 150", 1),
			wantCode: 1,
			wantErr: []string{
				`FILE:7: instance "k8s-api": vrid 300 out of range 1..255`,
				`FILE:8: instance "k8s-api": unknown key "priorty" (did you mean "priority"?)`,
			},
		},
		{
			name:     "syntax error",
			body:     "[[instance]\nname = 1\n",
			wantCode: 1,
			wantErr:  []string{"FILE:1: "},
		},
		{
			name:     "bad duration",
			body:     goodConfig + "advert_interval = \"1 second\"\n",
			wantCode: 1,
			wantErr:  []string{"FILE:10: "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			var stdout, stderr bytes.Buffer
			code := run([]string{"check", "--config", path}, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if want := strings.ReplaceAll(tt.wantOut, "FILE", path); stdout.String() != want {
				t.Errorf("stdout %q, want %q", stdout.String(), want)
			}
			for _, w := range tt.wantErr {
				if w = strings.ReplaceAll(w, "FILE", path); !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

func TestCheckMissingFile(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", "--config", filepath.Join(t.TempDir(), "none.toml")}, &stdout, &stderr); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "none.toml") {
		t.Errorf("stderr %q does not name the file", stderr.String())
	}
}

func TestRunRefusesBadConfigWithExConfig(t *testing.T) {
	path := writeConfig(t, strings.Replace(goodConfig, "vrid = 51", "vrid = 0", 1))
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--config", path}, &stdout, &stderr); code != exitConfig {
		t.Errorf("exit %d, want %d (EX_CONFIG)", code, exitConfig)
	}
	if !strings.Contains(stderr.String(), path+":7:") {
		t.Errorf("stderr lacks the line:\n%s", stderr.String())
	}
}

func TestVersionAndUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "vipd ") || !strings.Contains(stdout.String(), "go1.") {
		t.Errorf("version: %d %q", code, stdout.String())
	}
	if code := run([]string{"frobnicate"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "unknown command") {
		t.Errorf("unknown command: %d %q", code, stderr.String())
	}
	if code := run(nil, &stdout, &stderr); code != 2 {
		t.Errorf("no command: %d", code)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A check must never say OK about a file it did not read.
func TestCheckPositionalFile(t *testing.T) {
	good := writeConfig(t, goodConfig)
	bad := writeConfig(t, strings.Replace(goodConfig, "vrid = 51", "vrid = 300", 1))
	for _, tt := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"the file named", []string{"check", bad}, 1, ""},
		{"a good file named", []string{"check", good}, 0, good + ": OK\n"},
		{"a file and --config", []string{"check", "--config", good, bad}, 2, ""},
		{"two files", []string{"check", good, bad}, 2, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.wantCode || stdout.String() != tt.wantOut {
				t.Errorf("%q: exit %d, stdout %q; want %d, %q (stderr %q)", tt.args, code, stdout.String(), tt.wantCode, tt.wantOut, stderr.String())
			}
		})
	}
}

func TestCheckJSON(t *testing.T) {
	bad := writeConfig(t, strings.Replace(goodConfig, "vrid = 51", "vrid = 300", 1))
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", "--json", bad}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, stderr.String())
	}
	var res checkResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout.String())
	}
	if res.File != bad || res.OK || len(res.Problems) != 1 || res.Problems[0].File != bad || res.Problems[0].Line != 7 ||
		res.Problems[0].Message != `instance "k8s-api": vrid 300 out of range 1..255` {
		t.Errorf("check --json: %+v", res)
	}

	stdout.Reset()
	good := writeConfig(t, goodConfig)
	if code := run([]string{"check", "--json", "--config", good}, &stdout, &stderr); code != 0 {
		t.Fatalf("good file: exit %d", code)
	}
	var raw map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &raw); err != nil || raw["ok"] != true || raw["file"] != good {
		t.Errorf("good file: %v %s", err, stdout.String())
	}
	if p, ok := raw["problems"].([]any); !ok || len(p) != 0 {
		t.Errorf("problems = %#v, want []", raw["problems"])
	}

	stdout.Reset()
	missing := filepath.Join(t.TempDir(), "none.toml")
	if code := run([]string{"check", "--json", missing}, &stdout, &stderr); code != 1 {
		t.Fatalf("missing file: exit %d", code)
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.OK || len(res.Problems) != 1 || res.Problems[0].File != missing {
		t.Errorf("missing file: %v %+v", err, res)
	}
}

var commands = []string{"run", "check", "status", "history", "drain", "undrain", "reload", "cleanup", "version"}

// A word a command would ignore must not look accepted.
func TestUnexpectedArgumentsAreUsageErrors(t *testing.T) {
	for _, cmd := range commands {
		args := []string{cmd, "--socket", filepath.Join(t.TempDir(), "none.sock"), "extra"}
		if cmd == "run" {
			args = []string{cmd, "extra"}
		}
		if cmd == "check" {
			args = []string{cmd, "one.toml", "extra"}
		}
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != exitUsage || stdout.Len() != 0 || !strings.Contains(stderr.String(), `unexpected argument "extra"`) ||
			!strings.Contains(stderr.String(), "Usage:\n  vipd "+cmd) {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", args, code, stdout.String(), stderr.String())
		}
	}
	for _, args := range [][]string{{"status", "--bogus"}, {"drain", "--timeout", "soon"}, {"history", "--instance", "x"}, {"frobnicate"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitUsage || stdout.Len() != 0 || stderr.Len() == 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
}

func TestHelpPerCommand(t *testing.T) {
	for _, cmd := range append(commands, "completion") {
		for _, args := range [][]string{{"help", cmd}, {cmd, "--help"}, {cmd, "-h"}} {
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != 0 || stderr.Len() != 0 || !strings.Contains(stdout.String(), "Usage:\n  vipd "+cmd) {
				t.Errorf("%q: exit %d, stderr %q, stdout:\n%s", args, code, stderr.String(), stdout.String())
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "Exit status:") {
		t.Errorf("help: exit %d:\n%s", code, stdout.String())
	}
	if code := run([]string{"help", "nope"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("help nope: exit %d, want %d", code, exitUsage)
	}
}

// The packages install what `vipd completion SHELL` prints.
func TestCompletionScripts(t *testing.T) {
	check := map[string][]string{"bash": {"bash", "-n"}, "zsh": {"zsh", "-n"}, "fish": {"fish", "--no-execute"}}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run([]string{"completion", shell}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), "vipd") || !strings.Contains(stdout.String(), "__complete") {
				t.Fatalf("not a completion script for vipd:\n%.300s", stdout.String())
			}
			argv := check[shell]
			if _, err := exec.LookPath(argv[0]); err != nil {
				t.Skipf("%s is not installed: syntax not checked", argv[0])
			}
			script := filepath.Join(t.TempDir(), "vipd."+shell)
			if err := os.WriteFile(script, stdout.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(argv[0], append(argv[1:], script)...).CombinedOutput(); err != nil {
				t.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"completion", "tcsh"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("completion tcsh: exit %d, want %d", code, exitUsage)
	}
}

// What the scripts ask the binary: command names, and instance names from
// the configuration.
func TestCompletionCandidates(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"__complete", "dr"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "drain\t") {
		t.Errorf("commands: exit %d:\n%s", code, stdout.String())
	}
	cfg := writeConfig(t, goodConfig)
	stdout.Reset()
	if code := run([]string{"__complete", "drain", "--config", cfg, "--instance", ""}, &stdout, &stderr); code != 0 {
		t.Fatalf("instances: exit %d", code)
	}
	if lines := strings.Split(stdout.String(), "\n"); len(lines) < 3 || lines[0] != "all" || lines[1] != "k8s-api" {
		t.Errorf("instance candidates:\n%s", stdout.String())
	}
}

// The standard flag package accepted long flags after one dash; scripts
// may still spell them so.
func TestSingleDashLongFlags(t *testing.T) {
	good := writeConfig(t, goodConfig)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", "-config", good}, &stdout, &stderr); code != 0 || stdout.String() != good+": OK\n" {
		t.Errorf("check -config: exit %d, %q %q", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"check", "-json", "-config=" + good}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"ok": true`) {
		t.Errorf("check -json -config=: exit %d, %q %q", code, stdout.String(), stderr.String())
	}
}

func TestVersion(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none.sock")
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		var stdout, stderr bytes.Buffer
		if code := run(append(args, "--socket", none), &stdout, &stderr); args[0] == "version" && (code != 0 || stdout.String() != versionString()+"\n") {
			t.Errorf("%q: exit %d, %q", args, code, stdout.String())
		}
		if args[0] != "version" {
			stdout.Reset()
			if code := run(args, &stdout, &stderr); code != 0 || stdout.String() != versionString()+"\n" {
				t.Errorf("%q: exit %d, %q", args, code, stdout.String())
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version", "--json", "--socket", none}, &stdout, &stderr); code != 0 {
		t.Fatalf("version --json: exit %d", code)
	}
	var raw map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &raw); err != nil || raw["version"] != version || raw["go_version"] != runtime.Version() || raw["daemon"] != nil {
		t.Errorf("version --json without a daemon: %v\n%s", err, stdout.String())
	}

	// With a daemon, its own word too: it may run another binary.
	sock := serveFake(t, control.WithDaemonInfo(control.DaemonInfo{Version: "v0.9.0", PID: 4242, StartedAt: time.Now().Add(-time.Hour)}))
	stdout.Reset()
	if code := run([]string{"version", "--json", "--socket", sock}, &stdout, &stderr); code != 0 {
		t.Fatalf("version --json: exit %d", code)
	}
	var v versionInfo
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || v.Daemon == nil || v.Daemon.Version != "v0.9.0" || v.Daemon.PID != 4242 {
		t.Errorf("version --json with a daemon: %v\n%s", err, stdout.String())
	}
	stdout.Reset()
	run([]string{"version", "--socket", sock}, &stdout, &stderr)
	if lines := strings.Split(stdout.String(), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[1], "running vipd v0.9.0 since ") || !strings.HasSuffix(lines[1], "(1h0m ago), pid 4242") {
		t.Errorf("version with a daemon:\n%s", stdout.String())
	}
}

func TestStatusShowsTheRunningDaemon(t *testing.T) {
	started := time.Now().Add(-90 * time.Second)
	sock := serveFake(t, control.WithDaemonInfo(control.DaemonInfo{Version: "v1.2.0", Commit: "abc1234", GoVersion: "go1.26.8", PID: 77, StartedAt: started}))
	var stdout, stderr bytes.Buffer
	if code := run([]string{"status", "--socket", sock}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(stdout.String(), "\n")
	want := "running vipd v1.2.0 (commit abc1234, go1.26.8) since " + started.Format("15:04:05") + " (1m30s ago), pid 77"
	if len(lines) < 3 || lines[0] != want || !strings.HasPrefix(lines[1], "INSTANCE") {
		t.Errorf("status:\n%s\nwant the first line %q", stdout.String(), want)
	}
	// JSON stays the list scripts read.
	stdout.Reset()
	run([]string{"status", "--json", "--socket", sock}, &stdout, &stderr)
	var sts []control.InstanceStatus
	if err := json.Unmarshal(stdout.Bytes(), &sts); err != nil || len(sts) != 1 {
		t.Errorf("status --json: %v\n%s", err, stdout.String())
	}
}

func TestNoDaemonIsExit3WithAJSONError(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none.sock")
	for _, cmd := range []string{"status", "history", "drain", "undrain", "reload"} {
		var stdout, stderr bytes.Buffer
		code := run([]string{cmd, "--json", "--socket", none}, &stdout, &stderr)
		var e controlError
		if err := json.Unmarshal(stdout.Bytes(), &e); code != exitNotRunning || err != nil || e.Kind != "not_running" || e.Socket != none || !strings.Contains(e.Error, "no control socket") {
			t.Errorf("%s --json without a daemon: exit %d, %v, stdout %q", cmd, code, err, stdout.String())
		}
	}
}

// The CLI refuses a bad note before it reaches the daemon.
func TestDrainNoteCheckedBeforeSending(t *testing.T) {
	f := &fakeDaemon{}
	sock := serveFakeWith(t, f)
	var stdout, stderr bytes.Buffer
	code := run([]string{"drain", "--socket", sock, "--note", "evil\x1b[2J"}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "--note: note has control character U+001B") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if f.drains.Load() != 0 {
		t.Errorf("the daemon saw %d drains", f.drains.Load())
	}
	if code := run([]string{"drain", "--socket", sock, "--note", "CHG-42"}, &stdout, &stderr); code != 0 || f.drains.Load() != 1 {
		t.Errorf("a good note: exit %d, drains %d", code, f.drains.Load())
	}
}

// fakeDaemon answers the control protocol with one Master instance.
type fakeDaemon struct{ drains atomic.Int32 }

func (f *fakeDaemon) Status(context.Context) ([]control.InstanceStatus, error) {
	return []control.InstanceStatus{{Name: "k8s-api", Interface: "eth0", VRID: 51, State: control.StateMaster}}, nil
}
func (f *fakeDaemon) History(context.Context) ([]control.Transition, error) { return nil, nil }
func (f *fakeDaemon) Drain(context.Context, control.DrainRequest) (control.DrainResult, error) {
	f.drains.Add(1)
	return control.DrainResult{}, nil
}
func (f *fakeDaemon) Undrain(context.Context, string) (control.DrainResult, error) {
	return control.DrainResult{}, nil
}
func (f *fakeDaemon) Reload(context.Context) (control.ReloadResult, error) {
	return control.ReloadResult{OK: true}, nil
}

func serveFake(t *testing.T, opts ...control.ServerOption) string {
	return serveFakeWith(t, &fakeDaemon{}, opts...)
}

// serveFakeWith serves h on a socket in a temporary directory until the
// test ends, and returns the socket's path.
func serveFakeWith(t *testing.T, h control.Handler, opts ...control.ServerOption) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vipd.sock")
	serveFakeOn(t, path, h, opts...)
	return path
}

// serveFakeOn serves h on path until the test ends.
func serveFakeOn(t *testing.T, path string, h control.Handler, opts ...control.ServerOption) {
	t.Helper()
	srv, err := control.Listen(path, "", slog.New(slog.DiscardHandler), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
}

// What serve gives control.WithDaemonInfo: this binary's start, which a
// re-exec (same PID) resets because the new binary starts its own clock.
func TestDaemonInfo(t *testing.T) {
	d := daemonInfo()
	if d.Version != version || d.GoVersion != runtime.Version() || d.PID != os.Getpid() || d.Commit != commitString() {
		t.Errorf("daemonInfo() = %+v", d)
	}
	if !d.StartedAt.Equal(processStart) || d.StartedAt.After(time.Now()) {
		t.Errorf("StartedAt %v, want the process start %v", d.StartedAt, processStart)
	}
}

// A re-exec after an upgrade must not adopt again: the new binary resumes
// from the handover, and --adopt was for the first start only.
func TestReexecDropsAdopt(t *testing.T) {
	for _, tt := range []struct{ in, want []string }{
		{[]string{"vipd", "run", "--config", "/etc/vipd/vipd.toml", "--adopt"}, []string{"vipd", "run", "--config", "/etc/vipd/vipd.toml"}},
		{[]string{"vipd", "run", "-adopt", "--config=x"}, []string{"vipd", "run", "--config=x"}},
		{[]string{"vipd", "run", "--adopt=true"}, []string{"vipd", "run"}},
		{[]string{"vipd", "run", "--", "--adopt"}, []string{"vipd", "run", "--", "--adopt"}},
		{[]string{"vipd", "run", "--config", "adopt"}, []string{"vipd", "run", "--config", "adopt"}},
	} {
		if got := withoutAdopt(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("withoutAdopt(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
