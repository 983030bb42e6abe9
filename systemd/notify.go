package systemd

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends state changes and watchdog keep-alives to systemd. Its
// methods may be called from several goroutines. A nil *Notifier is valid
// and does nothing, which keeps the daemon's tests free of set-up.
type Notifier struct {
	log *slog.Logger
	// interval is how often the watchdog wants a keep-alive (half of
	// WATCHDOG_USEC); 0 when the watchdog is off for this process.
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	lastPing   time.Time
	lastStatus string
}

// NewNotifier reads the watchdog settings from the environment once; the
// notify socket (NOTIFY_SOCKET) is looked up at each send, as go-systemd
// does. Without NOTIFY_SOCKET every method is a no-op that returns nil.
func NewNotifier(log *slog.Logger) *Notifier {
	n := &Notifier{log: log, now: time.Now}
	timeout, err := daemon.SdWatchdogEnabled(false)
	switch {
	case err != nil:
		// A malformed WATCHDOG_USEC is systemd's or the operator's
		// mistake; running without the watchdog beats refusing to start.
		log.Warn("systemd watchdog disabled: bad environment", "error", err)
	case timeout > 0:
		// systemd recommends a keep-alive at half the timeout, so one
		// late tick does not get us killed.
		n.interval = timeout / 2
		log.Debug("systemd watchdog enabled", "timeout", timeout, "interval", n.interval)
	}
	return n
}

// Ready tells systemd that start-up (or a reload) is complete, with an
// optional status line.
func (n *Notifier) Ready(status string) error {
	if n == nil {
		return nil
	}
	msg := daemon.SdNotifyReady
	if status == "" {
		return n.send(msg)
	}
	status = oneLine(status)
	if err := n.send(msg + "\nSTATUS=" + status); err != nil {
		return err
	}
	n.setStatus(status)
	return nil
}

// Status sets the one-line summary that `systemctl status` shows, e.g.
// "k8s-api MASTER 192.0.2.10 since 12:00:01". A line equal to the last one
// sent is not sent again, so callers may refresh it freely.
func (n *Notifier) Status(status string) error {
	if n == nil {
		return nil
	}
	status = oneLine(status)
	n.mu.Lock()
	same := status == n.lastStatus
	n.mu.Unlock()
	if same {
		return nil
	}
	if err := n.send("STATUS=" + status); err != nil {
		return err
	}
	n.setStatus(status)
	return nil
}

// setStatus remembers a status that reached systemd; one that failed is
// sent again at the next call.
func (n *Notifier) setStatus(status string) {
	n.mu.Lock()
	n.lastStatus = status
	n.mu.Unlock()
}

// Reloading tells systemd that a configuration reload has begun; call
// Ready when it is over. MONOTONIC_USEC lets systemd (253 and later, with
// Type=notify-reload) match this message to the reload it asked for.
func (n *Notifier) Reloading() error {
	if n == nil {
		return nil
	}
	msg := daemon.SdNotifyReloading
	if usec := strings.TrimSuffix(daemon.SdNotifyMonotonicUsec(), "\n"); usec != "" {
		msg += "\n" + usec
	}
	return n.send(msg)
}

// Stopping tells systemd that shutdown has begun, so a slow shutdown (the
// final priority-0 adverts) is not mistaken for a hang.
func (n *Notifier) Stopping() error {
	if n == nil {
		return nil
	}
	return n.send(daemon.SdNotifyStopping)
}

// WatchdogInterval says how often Watchdog must be called: half of
// WATCHDOG_USEC, and false when the watchdog is off or meant for another
// process (WATCHDOG_PID names a different PID).
func (n *Notifier) WatchdogInterval() (time.Duration, bool) {
	if n == nil || n.interval <= 0 {
		return 0, false
	}
	return n.interval, true
}

// Watchdog sends a keep-alive. Call it from the loop whose liveness it
// vouches for, not from a timer of its own, or a stuck loop goes unnoticed.
// Callers may call it as often as they like: keep-alives closer together
// than half the interval are skipped, which still leaves at most 3/4 of
// the timeout between two of them when calls come once per interval.
func (n *Notifier) Watchdog() error {
	if n == nil || n.interval <= 0 {
		return nil
	}
	now := n.now()
	n.mu.Lock()
	skip := !n.lastPing.IsZero() && now.Sub(n.lastPing) < n.interval/2
	if !skip {
		n.lastPing = now
	}
	n.mu.Unlock()
	if skip {
		return nil
	}
	if err := n.send(daemon.SdNotifyWatchdog); err != nil {
		// Try again at the next call rather than half an interval later.
		n.mu.Lock()
		n.lastPing = time.Time{}
		n.mu.Unlock()
		return err
	}
	return nil
}

func (n *Notifier) send(msg string) error {
	sent, err := daemon.SdNotify(false, msg)
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", firstLine(msg), err)
	}
	if sent {
		n.log.Debug("sd_notify", "message", msg)
	}
	return nil
}

// oneLine keeps a status to one assignment: a newline would start another
// one (a status could otherwise say READY=1).
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
