package systemd

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var discard = slog.New(slog.DiscardHandler)

// listenNotify points NOTIFY_SOCKET at a fresh unixgram socket, as systemd
// does for a Type=notify service, and returns it for reading.
func listenNotify(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return conn
}

// next reads one datagram. The deadline only keeps a broken test from
// hanging; it measures nothing.
func next(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no datagram: %v", err)
	}
	return string(buf[:n])
}

// nothingQueued checks that no datagram is waiting. Sends on a unixgram
// socket are queued synchronously, so a non-blocking read is exact.
func nothingQueued(t *testing.T, conn *net.UnixConn) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if n, err := conn.Read(buf); err == nil {
		t.Errorf("unexpected datagram %q", buf[:n])
	} else if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal(err)
	}
}

func noWatchdog(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	t.Setenv("WATCHDOG_PID", "")
}

func TestDatagrams(t *testing.T) {
	conn := listenNotify(t)
	noWatchdog(t)
	n := NewNotifier(discard)

	steps := []struct {
		name string
		call func() error
		want string
	}{
		{"ready", func() error { return n.Ready("k8s-api MASTER 192.0.2.10 since 12:00:01") },
			"READY=1\nSTATUS=k8s-api MASTER 192.0.2.10 since 12:00:01"},
		{"ready without status", func() error { return n.Ready("") }, "READY=1"},
		{"status", func() error { return n.Status("k8s-api BACKUP since 12:05:00") },
			"STATUS=k8s-api BACKUP since 12:05:00"},
		{"newline cannot add an assignment", func() error { return n.Status("x\nREADY=1") },
			"STATUS=x READY=1"},
		{"stopping", n.Stopping, "STOPPING=1"},
	}
	for _, s := range steps {
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := next(t, conn); got != s.want {
			t.Errorf("%s: sent %q, want %q", s.name, got, s.want)
		}
	}
	nothingQueued(t, conn)
}

func TestStatusUnchangedNotResent(t *testing.T) {
	conn := listenNotify(t)
	noWatchdog(t)
	n := NewNotifier(discard)

	for range 3 {
		if err := n.Status("k8s-api MASTER"); err != nil {
			t.Fatal(err)
		}
	}
	if got := next(t, conn); got != "STATUS=k8s-api MASTER" {
		t.Fatalf("sent %q", got)
	}
	nothingQueued(t, conn)

	// Ready with a status counts as having sent it.
	if err := n.Ready("k8s-api BACKUP"); err != nil {
		t.Fatal(err)
	}
	next(t, conn)
	if err := n.Status("k8s-api BACKUP"); err != nil {
		t.Fatal(err)
	}
	nothingQueued(t, conn)
}

func TestReloading(t *testing.T) {
	conn := listenNotify(t)
	noWatchdog(t)
	n := NewNotifier(discard)

	if err := n.Reloading(); err != nil {
		t.Fatal(err)
	}
	got := next(t, conn)
	head, usec, ok := strings.Cut(got, "\nMONOTONIC_USEC=")
	if !ok || head != "RELOADING=1" {
		t.Fatalf("sent %q, want RELOADING=1 and MONOTONIC_USEC=", got)
	}
	if v, err := strconv.ParseUint(usec, 10, 64); err != nil || v == 0 {
		t.Errorf("MONOTONIC_USEC=%q is not a positive integer", usec)
	}
}

func TestNoNotifySocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "30000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	n := NewNotifier(discard)
	for name, call := range map[string]func() error{
		"ready":     func() error { return n.Ready("up") },
		"status":    func() error { return n.Status("up") },
		"reloading": n.Reloading,
		"stopping":  n.Stopping,
		"watchdog":  n.Watchdog,
	} {
		if err := call(); err != nil {
			t.Errorf("%s without NOTIFY_SOCKET: %v", name, err)
		}
	}
}

func TestNilNotifier(t *testing.T) {
	conn := listenNotify(t)
	var n *Notifier
	for name, call := range map[string]func() error{
		"ready":     func() error { return n.Ready("up") },
		"status":    func() error { return n.Status("up") },
		"reloading": n.Reloading,
		"stopping":  n.Stopping,
		"watchdog":  n.Watchdog,
	} {
		if err := call(); err != nil {
			t.Errorf("%s on nil: %v", name, err)
		}
	}
	if _, ok := n.WatchdogInterval(); ok {
		t.Error("nil Notifier has a watchdog")
	}
	nothingQueued(t, conn)
}

func TestSendError(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "missing.sock"))
	noWatchdog(t)
	err := NewNotifier(discard).Ready("up")
	if err == nil || !strings.Contains(err.Error(), "READY=1") {
		t.Errorf("Ready to a missing socket: %v, want an error naming READY=1", err)
	}
}

func TestWatchdogInterval(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	tests := []struct {
		name      string
		usec, pid string
		want      time.Duration
		enabled   bool
	}{
		{"off", "", "", 0, false},
		{"for this process", "30000000", pid, 15 * time.Second, true},
		{"no WATCHDOG_PID: for whoever reads it", "1000000", "", 500 * time.Millisecond, true},
		{"for another process", "30000000", strconv.Itoa(os.Getpid() + 1), 0, false},
		{"malformed", "soon", pid, 0, false},
		{"negative", "-5", pid, 0, false},
		{"malformed pid", "30000000", "init", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", tt.usec)
			t.Setenv("WATCHDOG_PID", tt.pid)
			got, ok := NewNotifier(discard).WatchdogInterval()
			if got != tt.want || ok != tt.enabled {
				t.Errorf("WatchdogInterval() = %v, %v; want %v, %v", got, ok, tt.want, tt.enabled)
			}
		})
	}
}

func TestWatchdog(t *testing.T) {
	conn := listenNotify(t)
	t.Setenv("WATCHDOG_USEC", "4000000") // keep-alive every 2s
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	n := NewNotifier(discard)
	now := time.Date(2025, 11, 29, 12, 0, 0, 0, time.UTC)
	n.now = func() time.Time { return now }

	ping := func(at time.Duration, want bool) {
		t.Helper()
		now = time.Date(2025, 11, 29, 12, 0, 0, 0, time.UTC).Add(at)
		if err := n.Watchdog(); err != nil {
			t.Fatal(err)
		}
		if want {
			if got := next(t, conn); got != "WATCHDOG=1" {
				t.Fatalf("at %v: sent %q, want WATCHDOG=1", at, got)
			}
		} else {
			nothingQueued(t, conn)
		}
	}
	ping(0, true)
	ping(10*time.Millisecond, false) // a busy loop does not flood systemd
	ping(999*time.Millisecond, false)
	ping(time.Second, true) // half the interval later
	ping(3*time.Second, true)
}

func TestWatchdogForAnotherProcess(t *testing.T) {
	conn := listenNotify(t)
	t.Setenv("WATCHDOG_USEC", "30000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	if err := NewNotifier(discard).Watchdog(); err != nil {
		t.Fatal(err)
	}
	nothingQueued(t, conn)
}
