package daemon

import (
	"context"
	"log/slog"
)

// instanceLog is an instance's log handler: its records carry the
// instance's name, VRID and interface first, as log.With would put them.
// log.With makes a handler of its own for each group, with the
// attributes formatted in advance, and the group keeps it for its life:
// about 250 bytes a group where this is 24. The attributes are added as
// each line is written instead; an instance writes few.
type instanceLog struct {
	parent slog.Handler
	id     *instanceID
}

func newInstanceLogger(parent *slog.Logger, id *instanceID) *slog.Logger {
	return slog.New(instanceLog{parent: parent.Handler(), id: id})
}

func (h instanceLog) attrs() []slog.Attr {
	return []slog.Attr{
		slog.String("instance", h.id.name),
		slog.Uint64("vrid", uint64(h.id.vrid)),
		slog.String("interface", h.id.ifname),
	}
}

func (h instanceLog) Enabled(ctx context.Context, l slog.Level) bool {
	return h.parent.Enabled(ctx, l)
}

func (h instanceLog) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(h.attrs()...)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.parent.Handle(ctx, out)
}

// A logger made from an instance's (a tracker's, a hook's) is rare and
// long-lived: it takes the attributes in advance, as log.With does.
func (h instanceLog) WithAttrs(as []slog.Attr) slog.Handler {
	return h.parent.WithAttrs(append(h.attrs(), as...))
}

func (h instanceLog) WithGroup(name string) slog.Handler {
	return h.parent.WithAttrs(h.attrs()).WithGroup(name)
}
