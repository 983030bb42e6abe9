package control

import (
	"encoding/json"
	"strings"
	"time"
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
