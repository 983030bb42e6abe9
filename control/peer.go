package control

import (
	"fmt"
	"log/slog"
	"os/user"
	"strconv"
)

// peerCred is who is at the other end of a connection, as the kernel says
// (SO_PEERCRED), so that drains and reloads in the log name a person.
type peerCred struct {
	ok       bool
	uid, pid int
}

// String is "uid 1000 (alice) pid 4321", or "unknown" where the platform
// cannot tell.
func (p peerCred) String() string {
	if !p.ok {
		return "unknown"
	}
	name := ""
	if u, err := user.LookupId(strconv.Itoa(p.uid)); err == nil {
		name = " (" + u.Username + ")"
	}
	return fmt.Sprintf("uid %d%s pid %d", p.uid, name, p.pid)
}

// LogValue defers the user look-up until a record is actually logged.
func (p peerCred) LogValue() slog.Value { return slog.StringValue(p.String()) }
