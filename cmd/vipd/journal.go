package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
)

// journalSender sends one entry to the journal; journal.Send in the daemon,
// a recorder in tests (go-systemd's socket path cannot be changed).
type journalSender func(message string, priority journal.Priority, fields map[string]string) error

// journalHandler writes records to the journal with their severity: natively
// with structured fields when send is set, else as sd-daemon "<N>" prefixed
// lines on the stream (journald reads the prefix as the priority). The
// message is the line the text or json handler would have written, so
// `journalctl -o cat` reads as before; every attribute is also a field
// VIPD_<KEY> (groups joined with '_'), so `journalctl VIPD_INSTANCE=k8s-api`
// finds an instance's lines.
type journalHandler struct {
	out    *journalOut
	format slog.Handler // renders the message into out.buf
	level  slog.Leveler
	prefix string  // "VIPD_" and the open groups, each followed by '_'
	fields []field // from WithAttrs, already named
}

// journalOut is what every handler derived from one journalHandler shares.
type journalOut struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	send     journalSender // nil: prefixed lines on stream
	stream   io.Writer
	identify string // SYSLOG_IDENTIFIER
}

type field struct{ name, value string }

// maxFieldName is journald's limit on a field name.
const maxFieldName = 64

// newJournalHandler returns a handler that sends to the journal with send,
// or writes prefixed lines to stream when send is nil or fails. newFormat
// makes the text or json handler that renders the message.
func newJournalHandler(send journalSender, stream io.Writer, level slog.Leveler, newFormat func(io.Writer, *slog.HandlerOptions) slog.Handler) *journalHandler {
	out := &journalOut{send: send, stream: stream, identify: "vipd"}
	opts := &slog.HandlerOptions{
		// The level decides here; the formatter renders what arrives.
		Level: slog.LevelDebug - 4,
		// The journal stamps every entry itself.
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}
	return &journalHandler{out: out, format: newFormat(&out.buf, opts), level: level, prefix: "VIPD_"}
}

func (h *journalHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *journalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	c := *h
	c.format = h.format.WithAttrs(attrs)
	c.fields = append([]field(nil), h.fields...)
	for _, a := range attrs {
		c.fields = appendFields(c.fields, h.prefix, a)
	}
	return &c
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.format = h.format.WithGroup(name)
	c.prefix = h.prefix + fieldName(name) + "_"
	return &c
}

func (h *journalHandler) Handle(ctx context.Context, r slog.Record) error {
	prio := journalPriority(r.Level)
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.buf.Reset()
	if err := h.format.Handle(ctx, r); err != nil {
		return err
	}
	msg := strings.TrimSuffix(h.out.buf.String(), "\n")
	if h.out.send != nil {
		fields := make(map[string]string, len(h.fields)+8)
		for _, f := range h.fields {
			fields[f.name] = f.value
		}
		r.Attrs(func(a slog.Attr) bool {
			for _, f := range appendFields(nil, h.prefix, a) {
				fields[f.name] = f.value
			}
			return true
		})
		fields["SYSLOG_IDENTIFIER"] = h.out.identify
		if r.PC != 0 {
			frame, _ := runtime.CallersFrames([]uintptr{r.PC}).Next()
			fields["CODE_FILE"], fields["CODE_LINE"], fields["CODE_FUNC"] = frame.File, strconv.Itoa(frame.Line), frame.Function
		}
		if err := h.out.send(msg, prio, fields); err == nil {
			return nil
		}
		// A journal that does not take the entry (restarting, full):
		// the stream still reaches it, or at least stderr.
	}
	_, err := fmt.Fprintf(h.out.stream, "<%d>%s\n", prio, msg)
	return err
}

// journalPriority maps a level to syslog's: Error 3, Warn 4, Info 6,
// Debug 7.
func journalPriority(l slog.Level) journal.Priority {
	switch {
	case l >= slog.LevelError:
		return journal.PriErr
	case l >= slog.LevelWarn:
		return journal.PriWarning
	case l >= slog.LevelInfo:
		return journal.PriInfo
	}
	return journal.PriDebug
}

// appendFields adds attribute a, flattened, under prefix.
func appendFields(fs []field, prefix string, a slog.Attr) []field {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return fs
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += fieldName(a.Key) + "_"
		}
		for _, g := range a.Value.Group() {
			fs = appendFields(fs, p, g)
		}
		return fs
	}
	if a.Key == "" {
		return fs
	}
	name := prefix + fieldName(a.Key)
	if len(name) > maxFieldName {
		name = name[:maxFieldName]
	}
	return append(fs, field{name, fieldValue(a.Value)})
}

// fieldName is key in upper case with anything but A-Z, 0-9 and '_' turned
// into '_', as journald wants field names.
func fieldName(key string) string {
	b := []byte(strings.ToUpper(key))
	for i, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			b[i] = '_'
		}
	}
	return string(b)
}

func fieldValue(v slog.Value) string {
	switch v.Kind() {
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return err.Error()
		}
	}
	return v.String()
}
