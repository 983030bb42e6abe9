package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testDaemon = DaemonInfo{Version: "1.2.0", Commit: "3f2a9c1d5e7b9a0c", GoVersion: "go1.26.8", PID: 812,
	StartedAt: at(3*time.Hour + 2*time.Minute)}

func TestStatusCarriesDaemonInfo(t *testing.T) {
	s := serve(t, &fakeHandler{status: statusFixture()}, WithDaemonInfo(testDaemon))
	sts, info, err := s.client.StatusWithDaemon(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != len(statusFixture()) {
		t.Errorf("%d instances, want %d", len(sts), len(statusFixture()))
	}
	if info == nil {
		t.Fatal("no daemon info in the status answer")
	}
	if diff := cmp.Diff(testDaemon, *info, cmpOpts...); diff != "" {
		t.Errorf("daemon info (-want +got):\n%s", diff)
	}

	// On the wire: beside the result, which stays the list scripts read.
	resp := exchange(t, s.path, `{"command":"status"}`+"\n")
	var raw map[string]any
	b, _ := json.Marshal(resp)
	json.Unmarshal(b, &raw)
	d, _ := raw["daemon"].(map[string]any)
	if d["version"] != "1.2.0" || d["pid"] != 812.0 || d["started_at"] == nil {
		t.Errorf("daemon object on the wire: %s", b)
	}
	var list []InstanceStatus
	if err := json.Unmarshal(resp.Result, &list); err != nil {
		t.Errorf("status result is no longer a list: %v", err)
	}

	// Other answers do not carry it.
	if resp := exchange(t, s.path, `{"command":"history"}`+"\n"); resp.Daemon != nil {
		t.Errorf("history answer carries daemon info: %+v", resp.Daemon)
	}
}

func TestStatusWithoutDaemonInfo(t *testing.T) {
	s := serve(t, &fakeHandler{status: statusFixture()})
	if _, info, err := s.client.StatusWithDaemon(context.Background()); err != nil || info != nil {
		t.Errorf("StatusWithDaemon = %v, %v; want no info and no error", info, err)
	}
}

func TestRenderDaemon(t *testing.T) {
	var b bytes.Buffer
	RenderDaemon(&b, testDaemon, testNow)
	want := "running vipd 1.2.0 (commit 3f2a9c1d5e7b, go1.26.8) since 12:00:05 (3h2m ago), pid 812\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
	b.Reset()
	RenderDaemon(&b, DaemonInfo{Version: "dev"}, testNow)
	if b.String() != "running vipd dev\n" {
		t.Errorf("bare info: %q", b.String())
	}
	b.Reset()
	RenderDaemon(&b, DaemonInfo{Version: "dev", BGPPeers: []BGPPeer{{
		Address: netip.MustParseAddr("198.51.100.1"), ASN: 65000, State: "idle",
		LastError: "connect: connection refused", Failures: 3, RetryAt: testNow.Add(19600 * time.Millisecond),
	}}}, testNow)
	if want := "bgp peer 198.51.100.1 AS65000 idle, 0 prefixes sent; last error: connect: connection refused; 3 failed attempts, next in 20s\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("a peer backing off:\n%s\nwant the line %q", b.String(), want)
	}
	b.Reset()
	RenderDaemon(&b, DaemonInfo{Version: "dev", InterfaceDrops: map[string]map[string]uint64{"eth0": {"vrid": 7, "too_short": 1}}}, testNow)
	if want := "running vipd dev\ninterface eth0: 8 adverts no instance claims (too_short 1, vrid 7)\n"; b.String() != want {
		t.Errorf("interface drops:\n%q\nwant %q", b.String(), want)
	}
}

func TestCheckNote(t *testing.T) {
	for _, ok := range []string{"", "kernel upgrade", "CHG-1234 (Zoë, 2h)", "チケット 42", strings.Repeat("x", MaxNoteLen)} {
		if err := CheckNote(ok); err != nil {
			t.Errorf("CheckNote(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"a\x00b", "line\nbreak", "tab\there", "\x1b[2Jcleared", "del\x7f", "c1\u0085", "bidi\u202eevil", "\xff\xfe", strings.Repeat("x", MaxNoteLen+1)} {
		if err := CheckNote(bad); err == nil {
			t.Errorf("CheckNote(%q) = nil, want an error", bad)
		}
	}
}

// The server refuses a bad note whatever the client checked: the note
// reaches hook environments and terminals.
func TestDrainRefusesBadNotes(t *testing.T) {
	h := &fakeHandler{}
	s := serve(t, h)
	for _, note := range []string{"evil\x00note", "two\nlines", "\x1b]0;title\x07", strings.Repeat("n", MaxNoteLen+1)} {
		_, err := s.client.Drain(context.Background(), DrainRequest{Instance: "k8s-api", Note: note})
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(e.Message, "drain: note ") {
			t.Errorf("drain with note %q: %v, want a refusal about the note", note, err)
		}
	}
	// Raw JSON too: \u0000 is valid JSON.
	if resp := exchange(t, s.path, `{"command":"drain","args":{"note":"a\u0000b"}}`+"\n"); resp.OK || !strings.Contains(resp.Error, "control character U+0000") {
		t.Errorf("raw drain with NUL: %+v", resp)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.drains) != 0 {
		t.Errorf("the handler saw %d drains with bad notes", len(h.drains))
	}
}
