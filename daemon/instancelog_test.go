package daemon

import (
	"bytes"
	"log/slog"
	"testing"
)

// An instance's logger writes what log.With wrote: the instance's
// attributes first, then the line's, in loggers made from it too.
func TestInstanceLogWritesAsWith(t *testing.T) {
	id := instanceID{name: "k8s-api", ifname: "eth0", vrid: 51}
	write := func(log *slog.Logger) {
		log.Info("state changed", "from", "BACKUP", "to", "MASTER")
		log.Debug("not written at info")
		log.With("tracker", "apiserver").Warn("tracker failed", "fall", 3)
		log.WithGroup("hook").Info("ran", "rc", 0)
	}
	render := func(make func(*slog.Logger) *slog.Logger) string {
		var b bytes.Buffer
		base := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey && len(groups) == 0 {
					return slog.Attr{}
				}
				return a
			},
		}))
		write(make(base))
		return b.String()
	}
	want := render(func(l *slog.Logger) *slog.Logger {
		return l.With("instance", id.name, "vrid", id.vrid, "interface", id.ifname)
	})
	got := render(func(l *slog.Logger) *slog.Logger { return newInstanceLogger(l, &id) })
	if got != want {
		t.Errorf("instance log:\n%s\nlog.With:\n%s", got, want)
	}
	if want == "" {
		t.Fatal("nothing written")
	}
}
