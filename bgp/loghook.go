package bgp

import (
	"context"
	"log/slog"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// gobgpHandler is the slog.Handler GoBGP logs to. It forwards GoBGP's
// warnings and errors (everything when the speaker's log is at debug) and
// picks out of its debug lines the one fact the speaker reports: a failed
// connection attempt to a peer, which GoBGP retries without a state change.
type gobgpHandler struct {
	next slog.Handler
	peer string // GoBGP's "Key" attribute: the peer's address
	// onFailure receives a failure GoBGP reports in its log: a connect
	// attempt that failed, a NOTIFICATION it sent. attempt says that the
	// failure ended an attempt to open the session which GoBGP reports no
	// state change for: a connect, or a NOTIFICATION on its outgoing
	// connection while the session itself still waits (idle, connect,
	// active), not a cease. One the session's own FSM sent (OpenSent and
	// after) comes with a state change, and one on the outgoing connection
	// while the session comes up on the router's must not pause it.
	onFailure func(peer, what string, attempt bool)
}

// sentNotification opens what onFailure is told of a NOTIFICATION GoBGP
// sent; its code follows.
const sentNotification = "sent NOTIFICATION "

// GoBGP's message and attribute names (pkg/server/fsm.go, peer.go).
const (
	gobgpConnectFailed = "failed to connect"
	gobgpSentNotif     = "sent notification"
	gobgpStopFailed    = "failed to stop BGP server"
	gobgpKeyAttr       = "Key"
	gobgpErrorAttr     = "Error"
	gobgpCodeAttr      = "Code"
	gobgpSubcodeAttr   = "Subcode"
	gobgpStateAttr     = "State"
)

func (h *gobgpHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *gobgpHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.onFailure != nil && h.peer != "" {
		switch r.Message {
		case gobgpConnectFailed:
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == gobgpErrorAttr {
					h.onFailure(h.peer, "connect: "+a.Value.String(), true)
					return false
				}
				return true
			})
		case gobgpSentNotif:
			var code, sub int64
			var state string
			r.Attrs(func(a slog.Attr) bool {
				switch a.Key {
				case gobgpStateAttr:
					state = a.Value.String()
				case gobgpCodeAttr:
					code = a.Value.Int64()
				case gobgpSubcodeAttr:
					sub = a.Value.Int64()
				}
				return true
			})
			waiting := state == bgp.BGP_FSM_IDLE.String() || state == bgp.BGP_FSM_CONNECT.String() || state == bgp.BGP_FSM_ACTIVE.String()
			h.onFailure(h.peer, sentNotification+bgp.NewNotificationErrorCode(uint8(code), uint8(sub)).String(), waiting && code != bgp.BGP_ERROR_CEASE)
		}
	}
	if r.Message == gobgpStopFailed {
		return nil // the second StopBgp after a graceful-restart stop
	}
	if r.Level >= slog.LevelWarn || h.next.Enabled(ctx, slog.LevelDebug) {
		if h.next.Enabled(ctx, r.Level) {
			return h.next.Handle(ctx, r)
		}
	}
	return nil
}

func (h *gobgpHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	for _, a := range attrs {
		if a.Key == gobgpKeyAttr {
			c.peer = a.Value.String()
		}
	}
	c.next = h.next.WithAttrs(attrs)
	return &c
}

func (h *gobgpHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	return &c
}
