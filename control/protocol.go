package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Commands of the protocol.
const (
	CmdStatus  = "status"
	CmdHistory = "history"
	CmdDrain   = "drain"
	CmdUndrain = "undrain"
	CmdReload  = "reload"
)

var commands = []string{CmdStatus, CmdHistory, CmdDrain, CmdUndrain, CmdReload}

const (
	// MaxRequestSize bounds a request line. Real requests are under 200
	// bytes; the bound keeps a misbehaving client from growing our memory.
	MaxRequestSize = 64 << 10
	// maxResponseSize bounds what the client reads: status of many
	// instances is large, a runaway peer is larger.
	maxResponseSize = 64 << 20

	// requestTimeout is how long a client has to send its request once
	// connected, and writeTimeout how long to take our response.
	requestTimeout = 5 * time.Second
	writeTimeout   = 5 * time.Second
	// handlerTimeout bounds a command in the daemon; a drain that waits
	// gets its own timeout on top.
	handlerTimeout = 30 * time.Second
	// DefaultDrainTimeout is how long a waiting drain waits when the
	// request names no timeout; MaxDrainTimeout is the most it may ask.
	DefaultDrainTimeout = 30 * time.Second
	MaxDrainTimeout     = 10 * time.Minute

	// maxConns bounds connections served at once; past it a client gets
	// an immediate "busy" error instead of a goroutine.
	maxConns = 32
	// DefaultClientTimeout bounds a client's status or history exchange
	// when Client.Timeout is zero.
	DefaultClientTimeout = 10 * time.Second
)

// Request is the one line a client sends.
type Request struct {
	Command string          `json:"command"`
	Args    json.RawMessage `json:"args,omitempty"`
}

// Response is the one reply the server sends.
type Response struct {
	OK       bool            `json:"ok"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	Problems []string        `json:"problems,omitempty"`
	// Daemon comes with status answers from a server given WithDaemonInfo.
	Daemon *DaemonInfo `json:"daemon,omitempty"`
}

// MaxNoteLen bounds a drain note in bytes: a ticket and a name, not a
// document. Notes reach status output, the log and hook environments.
const MaxNoteLen = 256

// CheckNote refuses a drain note that is too long, not UTF-8, or holds
// control characters (NUL, escapes, newlines) or bidirectional overrides,
// which would reach hook environments and terminals as they are. The
// server checks every drain; clients may check before sending.
func CheckNote(note string) error {
	if len(note) > MaxNoteLen {
		return fmt.Errorf("note is %d bytes long, more than the limit of %d", len(note), MaxNoteLen)
	}
	if !utf8.ValidString(note) {
		return errors.New("note is not valid UTF-8")
	}
	for i, r := range note {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return fmt.Errorf("note has control character %U at byte %d: use printable text", r, i)
		}
	}
	return nil
}

// instanceArgs are the arguments of undrain.
type instanceArgs struct {
	Instance string `json:"instance,omitempty"`
}

// Error is a refusal from the daemon: the request arrived and was
// answered with ok=false. Other errors from a Client mean the exchange
// itself failed.
type Error struct {
	Command  string
	Message  string
	Problems []string // FILE:LINE: msg, for a refused reload
}

// Error returns the message and then each problem on a line of its own,
// so printing it tells the whole story.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Command)
	b.WriteString(": ")
	b.WriteString(e.Message)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	return b.String()
}
