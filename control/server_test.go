package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var discard = slog.New(slog.DiscardHandler)

// cmpOpts compare results after a trip through JSON, where an empty list
// comes back as [] and addresses are values.
var cmpOpts = []cmp.Option{cmpopts.EquateEmpty(), cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})}

// fakeHandler answers with canned values and records what it was asked.
type fakeHandler struct {
	status    []InstanceStatus
	history   []Transition
	reload    ReloadResult
	reloadErr error
	// block, when set, makes Status say so on it and wait for ctx to end.
	block chan struct{}

	mu       sync.Mutex
	drains   []DrainRequest
	undrains []string
}

func (f *fakeHandler) Status(ctx context.Context) ([]InstanceStatus, error) {
	if f.block != nil {
		f.block <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.status, nil
}

func (f *fakeHandler) History(context.Context) ([]Transition, error) { return f.history, nil }

func (f *fakeHandler) Drain(_ context.Context, req DrainRequest) (DrainResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drains = append(f.drains, req)
	if req.Instance == "panic" {
		panic("drain of a bad instance")
	}
	if req.Instance == "missing" {
		return DrainResult{}, errors.New(`no instance "missing"`)
	}
	return DrainResult{Instances: []DrainedInstance{{Name: req.Instance, State: StateBackup,
		TakenOverBy: addr("198.51.100.12"), Message: "taken over"}}}, nil
}

func (f *fakeHandler) Undrain(_ context.Context, instance string) (DrainResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.undrains = append(f.undrains, instance)
	return DrainResult{Instances: []DrainedInstance{{Name: instance, State: StateBackup}}}, nil
}

func (f *fakeHandler) Reload(context.Context) (ReloadResult, error) { return f.reload, f.reloadErr }

// served is a Server running in its own goroutine for one test.
type served struct {
	path   string
	srv    *Server
	client *Client
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve has returned err
	err    error
}

// stop ends Serve and returns what it returned.
func (s *served) stop(t *testing.T) error {
	t.Helper()
	s.cancel()
	<-s.done
	return s.err
}

func serve(t *testing.T, h Handler, opts ...func(*Server)) *served {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vipd.sock")
	srv, err := Listen(path, "", discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(srv)
	}
	return start(t, srv, path, h)
}

func start(t *testing.T, srv *Server, path string, h Handler) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{path: path, srv: srv, cancel: cancel, done: make(chan struct{}),
		// Generous: a bound for a broken test, not a speed requirement.
		client: &Client{Path: path, Timeout: time.Minute}}
	go func() {
		defer close(s.done)
		s.err = srv.Serve(ctx, h)
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// exchange sends raw bytes and returns the decoded response.
func exchange(t *testing.T, path, raw string) Response {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	var resp Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		t.Fatalf("reading response to %q: %v", raw, err)
	}
	return resp
}

func TestStatusRoundTrip(t *testing.T) {
	h := &fakeHandler{status: statusFixture()}
	s := serve(t, h)
	got, err := s.client.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(statusFixture(), got, cmpOpts...); diff != "" {
		t.Errorf("status round trip (-want +got):\n%s", diff)
	}
}

// TestStatusJSON pins the JSON that scripts read (vipd status --json).
func TestStatusJSON(t *testing.T) {
	h := &fakeHandler{status: statusFixture()[:1]}
	s := serve(t, h)
	resp := exchange(t, s.path, `{"command":"status"}`+"\n")
	if !resp.OK {
		t.Fatalf("status refused: %s", resp.Error)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, resp.Result, "", "  "); err != nil {
		t.Fatal(err)
	}
	b.WriteByte('\n')
	golden(t, "status-json", b.Bytes())
}

func TestEmptyListsAreArrays(t *testing.T) {
	h := &fakeHandler{status: []InstanceStatus{{Name: "bare", State: StateBackup}}}
	s := serve(t, h)
	resp := exchange(t, s.path, `{"command":"status"}`+"\n")
	for _, want := range []string{`"vips":[]`, `"trackers":[]`, `"warnings":[]`, `"parts":[]`, `"drops":{}`} {
		if !strings.Contains(string(resp.Result), want) {
			t.Errorf("status result lacks %s: %s", want, resp.Result)
		}
	}
	resp = exchange(t, s.path, `{"command":"history"}`+"\n")
	if string(resp.Result) != "[]" {
		t.Errorf("empty history = %s, want []", resp.Result)
	}
}

func TestHistory(t *testing.T) {
	want := []Transition{{At: testNow, Instance: "k8s-api", From: StateBackup, To: StateMaster,
		Reason: "master_down", Cause: "no advert from 198.51.100.12 for 3.61s"}}
	s := serve(t, &fakeHandler{history: want})
	got, err := s.client.History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestReloadRefused(t *testing.T) {
	problems := []string{
		`vipd.toml:12: instance "k8s-api": priority 300 is out of range 1..254`,
		`vipd.toml:20: instance "db": unknown key "vipz" (did you mean "vips"?)`,
	}
	h := &fakeHandler{reload: ReloadResult{Problems: problems}, reloadErr: errors.New("configuration refused: 2 problems")}
	s := serve(t, h)
	res, err := s.client.Reload(context.Background())
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Reload: %v, want *Error", err)
	}
	if diff := cmp.Diff(problems, e.Problems); diff != "" {
		t.Errorf("error problems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(problems, res.Problems); diff != "" {
		t.Errorf("result problems (-want +got):\n%s", diff)
	}
	if res.OK {
		t.Error("refused reload has OK set")
	}
	msg := err.Error()
	for _, want := range append([]string{"reload: configuration refused"}, problems...) {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

func TestReloadOK(t *testing.T) {
	want := ReloadResult{OK: true, Changes: []string{"k8s-api: priority 100 -> 120"}}
	s := serve(t, &fakeHandler{reload: want})
	got, err := s.client.Reload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("reload (-want +got):\n%s", diff)
	}
}

func TestDrain(t *testing.T) {
	h := &fakeHandler{}
	s := serve(t, h)
	ctx := context.Background()

	res, err := s.client.Drain(ctx, DrainRequest{Instance: "k8s-api", Wait: true, Note: "kernel upgrade", By: "forged"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Instances) != 1 || res.Instances[0].TakenOverBy != addr("198.51.100.12") {
		t.Errorf("drain result %+v", res)
	}
	if _, err := s.client.Drain(ctx, DrainRequest{Timeout: Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.Undrain(ctx, "k8s-api"); err != nil {
		t.Fatal(err)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.drains) != 2 {
		t.Fatalf("handler saw %d drains, want 2", len(h.drains))
	}
	first := h.drains[0]
	if first.Instance != "k8s-api" || !first.Wait || first.Note != "kernel upgrade" {
		t.Errorf("drain request arrived as %+v", first)
	}
	if first.Timeout != Duration(DefaultDrainTimeout) {
		t.Errorf("waiting drain without a timeout got %v, want the default %v", first.Timeout, DefaultDrainTimeout)
	}
	if first.By == "forged" || first.By == "" {
		t.Errorf("By = %q, want the server's word on the peer", first.By)
	}
	if want := "uid " + strconv.Itoa(os.Getuid()); !strings.HasPrefix(first.By, want) && first.By != "unknown" {
		t.Errorf("By = %q, want it to start with %q", first.By, want)
	}
	if all := h.drains[1]; all.Instance != "" || all.Wait || all.Timeout != Duration(time.Minute) {
		t.Errorf("drain of all arrived as %+v", all)
	}
	if diff := cmp.Diff([]string{"k8s-api"}, h.undrains); diff != "" {
		t.Errorf("undrains (-want +got):\n%s", diff)
	}
}

func TestHandlerError(t *testing.T) {
	s := serve(t, &fakeHandler{})
	_, err := s.client.Drain(context.Background(), DrainRequest{Instance: "missing"})
	var e *Error
	if !errors.As(err, &e) || e.Message != `no instance "missing"` || e.Command != "drain" {
		t.Errorf("Drain of a missing instance: %v", err)
	}
}

func TestHandlerPanicIsAnErrorResponse(t *testing.T) {
	s := serve(t, &fakeHandler{status: statusFixture()})
	_, err := s.client.Drain(context.Background(), DrainRequest{Instance: "panic"})
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "internal error") {
		t.Errorf("Drain that panics: %v, want an internal error", err)
	}
	if _, err := s.client.Status(context.Background()); err != nil {
		t.Errorf("status after a panic: %v", err)
	}
}

func TestMalformedRequests(t *testing.T) {
	s := serve(t, &fakeHandler{status: statusFixture()})
	tests := []struct {
		name, raw, want string
	}{
		{"not JSON", "hello\n", "malformed request"},
		{"JSON but not an object", "[1,2]\n", "malformed request"},
		{"no command", "{}\n", "no command"},
		{"unknown command", `{"command":"takeover"}` + "\n", `unknown command "takeover"`},
		{"unknown field", `{"command":"status","verbose":true}` + "\n", "malformed request"},
		{"two values", `{"command":"status"}{"command":"status"}` + "\n", "more than one JSON value"},
		{"args for status", `{"command":"status","args":{"x":1}}` + "\n", "status: bad args"},
		{"misspelt drain arg", `{"command":"drain","args":{"instnace":"k8s-api"}}` + "\n", "drain: bad args"},
		{"bad duration", `{"command":"drain","args":{"timeout":"soon"}}` + "\n", "drain: bad args"},
		{"negative timeout", `{"command":"drain","args":{"wait":true,"timeout":"-1s"}}` + "\n", "negative timeout"},
		{"timeout too long", `{"command":"drain","args":{"wait":true,"timeout":"1h"}}` + "\n", "longer than the limit"},
		{"empty line", "\n", "malformed request"},
		{"binary", "\x00\xff\xfe\n", "malformed request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := exchange(t, s.path, tt.raw)
			if resp.OK || !strings.Contains(resp.Error, tt.want) {
				t.Errorf("response %+v, want an error containing %q", resp, tt.want)
			}
		})
	}
	if _, err := s.client.Status(context.Background()); err != nil {
		t.Errorf("status after malformed requests: %v", err)
	}
}

// A request without a trailing newline is complete when the client closes
// its side, as `printf '{"command":"status"}' | socat - UNIX:...` does.
func TestRequestWithoutNewline(t *testing.T) {
	s := serve(t, &fakeHandler{status: statusFixture()})
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: s.path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(`{"command":"status"}`)); err != nil {
		t.Fatal(err)
	}
	if err := conn.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	var resp Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		t.Fatal(err)
	}
	if !resp.OK {
		t.Errorf("status without newline refused: %s", resp.Error)
	}
}

func TestOversizedRequest(t *testing.T) {
	s := serve(t, &fakeHandler{status: statusFixture()})
	conn, err := net.Dial("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// The server stops reading at the limit, so our write may fail with
	// EPIPE once it has answered; only the answer matters.
	var wg sync.WaitGroup
	wg.Go(func() {
		big := `{"command":"status","args":"` + strings.Repeat("a", 4*MaxRequestSize) + `"}` + "\n"
		conn.Write([]byte(big))
	})
	var resp Response
	err = json.NewDecoder(bufio.NewReader(conn)).Decode(&resp)
	conn.Close()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if resp.OK || !strings.Contains(resp.Error, "larger than") {
		t.Errorf("oversized request: %+v, want refused as too large", resp)
	}
	if _, err := s.client.Status(context.Background()); err != nil {
		t.Errorf("status after an oversized request: %v", err)
	}
}

// Silent clients hold connections open and never write. With the request
// timeout made an hour, the status call can only succeed if they hold up
// nothing but themselves.
func TestSilentClientsDoNotBlockOthers(t *testing.T) {
	s := serve(t, &fakeHandler{status: statusFixture()}, func(srv *Server) { srv.requestTimeout = time.Hour })
	for range 5 {
		c, err := net.Dial("unix", s.path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	if _, err := s.client.Status(context.Background()); err != nil {
		t.Fatalf("status while silent clients are connected: %v", err)
	}
	// Shutdown does not wait for them either.
	if err := s.stop(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestTooManyConnections(t *testing.T) {
	s := serve(t, &fakeHandler{status: statusFixture()}, func(srv *Server) { srv.requestTimeout = time.Hour })
	for range maxConns {
		c, err := net.Dial("unix", s.path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	_, err := s.client.Status(context.Background())
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "busy") {
		t.Errorf("status past the connection limit: %v, want busy", err)
	}
}

func TestShutdownCancelsHandler(t *testing.T) {
	h := &fakeHandler{block: make(chan struct{})}
	s := serve(t, h)
	errc := make(chan error, 1)
	go func() {
		_, err := s.client.Status(context.Background())
		errc <- err
	}()
	<-h.block // the request is in the handler
	if err := s.stop(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := <-errc; err == nil {
		t.Error("status answered although the handler never returned")
	}
}

func TestSocketFile(t *testing.T) {
	s := serve(t, &fakeHandler{})
	fi, err := os.Lstat(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		t.Errorf("%s is %v, not a socket", s.path, fi.Mode())
	}
	if perm := fi.Mode().Perm(); perm != 0o660 {
		t.Errorf("socket mode %#o, want 0660", perm)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(s.path), ".vipd-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after Serve returned: %v", err)
	}
}

func TestSocketGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to an arbitrary gid needs root")
	}
	g, err := user.LookupGroupId("1")
	if err != nil {
		t.Skipf("no group with gid 1 to test with: %v", err)
	}
	for _, group := range []string{"1", g.Name} {
		t.Run(group, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vipd.sock")
			srv, err := Listen(path, group, discard)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if st.Gid != 1 || st.Uid != uint32(os.Geteuid()) {
				t.Errorf("socket owned by %d:%d, want %d:1", st.Uid, st.Gid, os.Geteuid())
			}
		})
	}
}

func TestUnknownGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vipd.sock")
	if _, err := Listen(path, "no-such-group-vipd", discard); err == nil {
		t.Fatal("Listen with an unknown group succeeded")
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused Listen left %s behind", path)
	}
}

func TestDirectoryCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "vipd")
	path := filepath.Join(dir, "vipd.sock")
	srv, err := Listen(path, "", discard)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o755 {
		t.Errorf("directory mode %#o, want 0755", perm)
	}
}

// staleSocket leaves a socket file that nothing listens on, as a daemon
// killed with SIGKILL does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}

func TestStaleSocketReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vipd.sock")
	staleSocket(t, path)
	srv, err := Listen(path, "", discard)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	s := start(t, srv, path, &fakeHandler{status: statusFixture()})
	if _, err := s.client.Status(context.Background()); err != nil {
		t.Errorf("status on the replacing socket: %v", err)
	}
}

func TestLiveSocketNotStolen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vipd.sock")
	first, err := Listen(path, "", discard)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, first, path, &fakeHandler{status: statusFixture()})

	second, err := Listen(path, "", discard)
	if err == nil {
		second.Close()
		t.Fatal("a second Listen took over a live socket")
	}
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "another vipd is running") {
		t.Errorf("second Listen: %v, want ErrInUse saying another vipd is running", err)
	}
	if _, err := s.client.Status(context.Background()); err != nil {
		t.Errorf("the first daemon lost its socket: %v", err)
	}
}

func TestNotASocketNotReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vipd.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path, "", discard); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen over a regular file: %v, want refused", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Error("the regular file was replaced")
	}
}

// Close removes only its own socket: after a new daemon replaced it, the
// old one's late Close must not remove the new one's.
func TestCloseLeavesAnotherDaemonsSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vipd.sock")
	old, err := Listen(path, "", discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	replacement, err := Listen(path, "", discard)
	if err != nil {
		t.Fatal(err)
	}
	defer replacement.Close()
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("the old server's Close removed the new socket: %v", err)
	}
}

func TestServeTwice(t *testing.T) {
	s := serve(t, &fakeHandler{})
	// Either call may come first; the other must refuse. With ctx already
	// cancelled, this one returns at once even if it wins.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.srv.Serve(ctx, &fakeHandler{})
	if first := s.stop(t); (err == nil) == (first == nil) {
		t.Errorf("Serve twice returned %v and %v, want exactly one error", first, err)
	}
}

func TestClientNotRunning(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	staleSocket(t, stale)
	for _, path := range []string{filepath.Join(dir, "missing.sock"), stale} {
		c := &Client{Path: path, Timeout: time.Minute}
		_, err := c.Status(context.Background())
		if !errors.Is(err, ErrNotRunning) {
			t.Errorf("status on %s: %v, want ErrNotRunning", filepath.Base(path), err)
		}
	}
}

func TestClientTimeout(t *testing.T) {
	// A listener that accepts (the kernel's backlog does) but never
	// answers: the client gives up at its timeout.
	path := filepath.Join(t.TempDir(), "mute.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := &Client{Path: path, Timeout: time.Millisecond}
	_, err = c.Status(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer from vipd") {
		t.Errorf("status to a mute socket: %v, want a timeout", err)
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(Duration(3610 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"text":"3.61s","ms":3610}` {
		t.Errorf("Marshal = %s", b)
	}
	for in, want := range map[string]time.Duration{
		`"30s"`:                        30 * time.Second,
		`1500`:                         1500 * time.Millisecond,
		`0.25`:                         250 * time.Microsecond,
		`{"text":"3.61s","ms":3612.5}`: 3612500 * time.Microsecond,
		`{"text":"2s"}`:                2 * time.Second,
		`null`:                         0,
	} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || time.Duration(d) != want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{`"soon"`, `true`, `{}`, `1e300`} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Unmarshal(%s) accepted as %v", in, time.Duration(d))
		}
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{Command: "reload", Message: "configuration refused", Problems: []string{"a:1: x", "a:2: y"}}
	if got, want := e.Error(), "reload: configuration refused\n  a:1: x\n  a:2: y"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	_ = fmt.Sprint(e)
}
