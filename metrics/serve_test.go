package metrics

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// waitTimeout bounds how long a test waits for Serve to return.
const waitTimeout = 10 * time.Second

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitTimeout):
		t.Fatal("Serve did not return after its context ended")
		return nil
	}
}

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m := New(fixture)
	done := make(chan error, 1)
	go func() { done <- m.serve(ctx, ln, discard()) }()
	base := "http://" + ln.Addr().String()

	code, ctype, body := get(t, base+"/metrics")
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/plain") {
		t.Errorf("GET /metrics: %d %q", code, ctype)
	}
	for _, want := range []string{
		`vipd_instance_state{state="MASTER",vrrp_instance="k8s-api"} 1`,
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /metrics: no %q", want)
		}
	}

	code, ctype, body = get(t, base+"/")
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, `href="metrics"`) {
		t.Errorf("GET /: %d %q %q", code, ctype, body)
	}
	if code, _, _ := get(t, base+"/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /nothing: %d, want 404", code)
	}

	cancel()
	if err := wait(t, done); err != nil {
		t.Errorf("Serve after its context ended: %v, want nil", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("still listening after Serve returned")
	}
}

func TestServeStops(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- New(nil).Serve(ctx, "127.0.0.1:0", discard()) }()
	cancel()
	if err := wait(t, done); err != nil {
		t.Errorf("Serve: %v, want nil", err)
	}
}

func TestServeListenError(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	for _, addr := range []string{
		"127.0.0.1:99999",     // no such port
		"not an address",      // no port at all
		taken.Addr().String(), // in use
	} {
		done := make(chan error, 1)
		// The context never ends: a listen error must come back by
		// itself.
		go func() { done <- New(nil).Serve(t.Context(), addr, discard()) }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("Serve(%q) = nil, want an error", addr)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("Serve(%q) did not return its listen error", addr)
		}
	}
}
