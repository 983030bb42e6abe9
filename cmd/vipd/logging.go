package main

import (
	"io"
	"log/slog"
	"os"

	"github.com/coreos/go-systemd/v22/journal"
	"github.com/vipd/vipd/config"
)

// newLogger logs to w in the configured format (log_format). When w is a
// stderr that systemd connected to the journal, records go to the journal
// with their severity instead: natively, with a VIPD_<KEY> field per
// attribute, or as "<N>"-prefixed lines on the stream when the journal's
// socket cannot be reached. The journal stamps entries, so our own
// timestamps are left out there.
func newLogger(w io.Writer, g config.Global, level slog.Leveler) *slog.Logger {
	return slog.New(newLogHandler(w, g, level))
}

func newLogHandler(w io.Writer, g config.Global, level slog.Leveler) slog.Handler {
	format := formatHandler(g.LogFormat)
	if w == io.Writer(os.Stderr) && stderrIsJournal() {
		var send journalSender
		if journal.Enabled() {
			send = journal.Send
		}
		return newJournalHandler(send, w, level, format)
	}
	return format(w, &slog.HandlerOptions{Level: level})
}

// newDaemonLogger is the daemon's logger: records are written on a
// goroutine of their own (asyncHandler). Call flush before the process
// exits or re-executes.
func newDaemonLogger(w io.Writer, g config.Global, level slog.Leveler) (log *slog.Logger, flush func()) {
	h, flush := newAsyncHandler(newLogHandler(w, g, level))
	return slog.New(h), flush
}

// formatHandler returns the constructor of the handler for log_format.
func formatHandler(logFormat string) func(io.Writer, *slog.HandlerOptions) slog.Handler {
	if logFormat == "json" {
		return func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) }
	}
	return func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) }
}

// stderrIsJournal tells whether stderr is the stream systemd named in
// JOURNAL_STREAM, not merely inherited the variable (a shell in a unit
// whose stderr was redirected).
func stderrIsJournal() bool {
	ok, err := journal.StderrIsJournalStream()
	return err == nil && ok
}
