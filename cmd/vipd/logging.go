package main

import (
	"io"
	"log/slog"
	"os"

	"github.com/vipd/vipd/config"
)

// newLogger logs to w in the configured format. Under systemd the journal
// stamps every line, so our own timestamps are left out.
func newLogger(w io.Writer, g config.Global, level slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if os.Getenv("JOURNAL_STREAM") != "" {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if g.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h)
}
