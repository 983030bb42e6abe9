package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/vipd/vipd/config"
)

// ErrNotRunning means no daemon answers at the socket: the file is missing
// or nothing listens on it.
var ErrNotRunning = errors.New("vipd is not running")

// Client talks to a daemon's control socket. The zero value uses
// config.DefaultSocket, and DefaultClientTimeout for status and history
// (longer for changes, which the daemon may take 30s to carry out).
type Client struct {
	Path    string        // the socket; empty: config.DefaultSocket
	Timeout time.Duration // for one exchange; a waiting drain adds its own
}

// Status returns the status of every instance.
func (c *Client) Status(ctx context.Context) ([]InstanceStatus, error) {
	sts, _, err := c.StatusWithDaemon(ctx)
	return sts, err
}

// StatusWithDaemon returns the status of every instance and what the
// daemon says about itself: nil from a daemon that does not say.
func (c *Client) StatusWithDaemon(ctx context.Context) ([]InstanceStatus, *DaemonInfo, error) {
	var sts []InstanceStatus
	resp, err := c.do(ctx, CmdStatus, nil, 0, &sts)
	return sts, resp.Daemon, err
}

// History returns the daemon's recent state transitions, oldest first.
func (c *Client) History(ctx context.Context) ([]Transition, error) {
	var ts []Transition
	_, err := c.do(ctx, CmdHistory, nil, 0, &ts)
	return ts, err
}

// Drain asks req.Instance (every instance when empty) to hand its
// addresses over. With req.Wait the call returns once another host has
// taken over or req.Timeout has passed.
func (c *Client) Drain(ctx context.Context, req DrainRequest) (DrainResult, error) {
	var extra time.Duration
	if req.Wait {
		extra = time.Duration(req.Timeout)
		if extra <= 0 {
			extra = DefaultDrainTimeout
		}
	}
	var res DrainResult
	_, err := c.do(ctx, CmdDrain, req, extra, &res)
	return res, err
}

// Undrain lets instance (every instance when empty) compete for its
// addresses again.
func (c *Client) Undrain(ctx context.Context, instance string) (DrainResult, error) {
	var res DrainResult
	_, err := c.do(ctx, CmdUndrain, instanceArgs{Instance: instance}, 0, &res)
	return res, err
}

// Reload makes the daemon re-read its configuration. A refused file gives
// an *Error whose Problems list "FILE:LINE: msg", and a ReloadResult with
// the same problems.
func (c *Client) Reload(ctx context.Context) (ReloadResult, error) {
	var res ReloadResult
	_, err := c.do(ctx, CmdReload, nil, 0, &res)
	var e *Error
	if errors.As(err, &e) && len(res.Problems) == 0 {
		res.Problems = e.Problems
	}
	return res, err
}

// do carries out one exchange, decodes the result into out, and returns the
// response for what else it carries.
func (c *Client) do(ctx context.Context, cmd string, args any, extra time.Duration, out any) (Response, error) {
	var resp Response
	path := c.Path
	if path == "" {
		path = config.DefaultSocket
	}
	timeout := c.Timeout
	switch {
	case timeout > 0:
	case cmd == CmdStatus || cmd == CmdHistory:
		timeout = DefaultClientTimeout
	default:
		// A change may take the daemon its whole handlerTimeout; giving
		// up earlier would report a failure for a change that happens.
		timeout = handlerTimeout + DefaultClientTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+extra)
	defer cancel()

	req := Request{Command: cmd}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return resp, fmt.Errorf("%s: %w", cmd, err)
		}
		req.Args = b
	}
	line, err := json.Marshal(req)
	if err != nil {
		return resp, fmt.Errorf("%s: %w", cmd, err)
	}

	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if ctx.Err() != nil {
			return resp, exchangeError(ctx, cmd, path, timeout+extra, err)
		}
		return resp, dialError(path, err)
	}
	defer conn.Close()
	// The deadline covers the whole exchange; cancelling ctx ends it early.
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			return resp, err
		}
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	_, werr := conn.Write(append(line, '\n'))
	// A server that refuses at once (busy) may close before our write
	// lands; its answer is waiting all the same, so read before failing.
	if err := json.NewDecoder(io.LimitReader(conn, maxResponseSize)).Decode(&resp); err != nil {
		switch {
		case werr != nil:
			err = werr
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			err = errors.New("the daemon closed the connection without an answer")
		}
		return resp, exchangeError(ctx, cmd, path, timeout+extra, err)
	}
	if len(resp.Result) > 0 && string(resp.Result) != "null" {
		if err := json.Unmarshal(resp.Result, out); err != nil {
			return resp, fmt.Errorf("%s: decoding the answer: %w", cmd, err)
		}
	}
	if !resp.OK {
		msg := resp.Error
		if msg == "" {
			msg = "refused without a reason"
		}
		return resp, &Error{Command: cmd, Message: msg, Problems: resp.Problems}
	}
	return resp, nil
}

// exchangeError tells a timeout or a cancellation from a broken exchange.
func exchangeError(ctx context.Context, cmd, path string, limit time.Duration, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", cmd, cause)
	}
	// The socket's deadline is ctx's, and may fire a moment before ctx
	// notices.
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%s: no answer from vipd on %s within %v: %w", cmd, path, limit, context.DeadlineExceeded)
	}
	// The socket's own name in a net.OpError is the daemon's temporary
	// one (see bind); path is what the operator knows.
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return fmt.Errorf("%s: %s: %w", cmd, path, err)
}

// dialError says what a failed connect means for an operator.
func dialError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%w: no control socket at %s", ErrNotRunning, path)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w: nothing listens on %s (a stale socket)", ErrNotRunning, path)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("permission denied on %s: run as root or as a member of the socket's group", path)
	}
	return fmt.Errorf("connecting to %s: %w", path, err)
}
