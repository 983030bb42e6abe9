package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Handler carries out commands; the daemon implements it. Its methods are
// called from the server's connection goroutines, several at a time, with
// a context that ends when the command's time is up or the server stops.
type Handler interface {
	Status(ctx context.Context) ([]InstanceStatus, error)
	History(ctx context.Context) ([]Transition, error)
	// Drain gets a request whose Timeout is set when Wait is (the server
	// fills in DefaultDrainTimeout) and whose By names the requester.
	Drain(ctx context.Context, req DrainRequest) (DrainResult, error)
	Undrain(ctx context.Context, instance string) (DrainResult, error)
	// Reload is synchronous. A refused file returns an error saying so and
	// a ReloadResult whose Problems list "FILE:LINE: msg".
	Reload(ctx context.Context) (ReloadResult, error)
}

// acceptBackoff paces retries when Accept fails for a reason that may
// pass, such as running out of file descriptors.
const acceptBackoff = 100 * time.Millisecond

// Serve answers requests until ctx ends or Close is called, then waits for
// the requests under way and removes the socket file. It returns nil after
// an orderly stop. Each connection gets its own goroutine, at most 32 at a
// time, each bounded by deadlines, so a slow or hostile client holds up
// neither the daemon nor other clients.
func (s *Server) Serve(ctx context.Context, h Handler) error {
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("control: Serve called twice")
	}
	defer s.Close()
	// Closing the listener is what unblocks Accept.
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()

	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, maxConns)
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			s.log.Warn("control socket: accept failed", "error", err)
			t := time.NewTimer(acceptBackoff)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			// A new connection's send buffer is empty, so this write
			// does not block the accept loop.
			s.log.Warn("control socket: too many connections, refusing one", "limit", maxConns)
			s.reply(conn, Response{Error: "busy: too many control connections, try again"})
			conn.Close()
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			s.serveConn(ctx, conn, h)
		})
	}
}

func (s *Server) serveConn(ctx context.Context, conn *net.UnixConn, h Handler) {
	defer conn.Close()
	// Shutdown interrupts a read or write under way. Closing (rather than
	// a past deadline) cannot be undone by the deadlines set below.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	peer := peerOf(conn)
	log := s.log.With("peer", peer)
	if err := conn.SetReadDeadline(time.Now().Add(s.requestTimeout)); err != nil {
		return
	}
	line, err := readRequest(conn, s.requestTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		log.Debug("control socket: bad request", "error", err)
		s.reply(conn, Response{Error: err.Error()})
		return
	}
	s.reply(conn, s.handle(ctx, log, peer, line, h))
}

var errTooLarge = fmt.Errorf("request larger than %d bytes", MaxRequestSize)

// readRequest reads one line, or everything up to EOF from a client that
// sends no newline but closes its side, as `printf ... | socat` does.
func readRequest(conn net.Conn, timeout time.Duration) ([]byte, error) {
	r := bufio.NewReader(io.LimitReader(conn, MaxRequestSize+1))
	line, err := r.ReadBytes('\n')
	switch {
	case len(line) > MaxRequestSize:
		return nil, errTooLarge
	case err == nil, errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0:
		return line, nil
	case errors.Is(err, io.EOF):
		return nil, errors.New("empty request")
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fmt.Errorf("no request within %v", timeout)
	}
	return nil, err
}

// handle decodes and runs one request. A panic in the handler becomes an
// error response: a bug behind the control socket must not take the
// daemon, and with it the address, down.
func (s *Server) handle(ctx context.Context, log *slog.Logger, p peerCred, line []byte, h Handler) (resp Response) {
	var req Request
	if err := decodeStrict(line, &req); err != nil {
		return Response{Error: "malformed request: " + err.Error()}
	}
	log = log.With("command", req.Command)
	defer func() {
		if v := recover(); v != nil {
			log.Error("control command panicked", "panic", v, "stack", string(debug.Stack()))
			resp = Response{Error: "internal error in the daemon (see its log)"}
		}
	}()

	timeout := handlerTimeout
	var run func(ctx context.Context) (result any, problems []string, err error)
	switch req.Command {
	case CmdStatus:
		if err := decodeArgs(req.Args, &struct{}{}); err != nil {
			return Response{Error: "status: " + err.Error()}
		}
		run = func(ctx context.Context) (any, []string, error) {
			sts, err := h.Status(ctx)
			for i := range sts {
				sts[i].normalize()
			}
			return nonNil(sts), nil, err
		}
	case CmdHistory:
		if err := decodeArgs(req.Args, &struct{}{}); err != nil {
			return Response{Error: "history: " + err.Error()}
		}
		run = func(ctx context.Context) (any, []string, error) {
			ts, err := h.History(ctx)
			return nonNil(ts), nil, err
		}
	case CmdDrain:
		var args DrainRequest
		if err := decodeArgs(req.Args, &args); err != nil {
			return Response{Error: "drain: " + err.Error()}
		}
		switch {
		case args.Timeout < 0:
			return Response{Error: "drain: negative timeout"}
		case time.Duration(args.Timeout) > MaxDrainTimeout:
			return Response{Error: fmt.Sprintf("drain: timeout %v is longer than the limit of %v", args.Timeout, MaxDrainTimeout)}
		case args.Wait && args.Timeout == 0:
			args.Timeout = Duration(DefaultDrainTimeout)
		}
		if args.Wait {
			timeout += time.Duration(args.Timeout)
		}
		// Only the kernel's word counts for who asked.
		args.By = p.String()
		if err := CheckNote(args.Note); err != nil {
			return Response{Error: "drain: " + err.Error()}
		}
		log.Info("drain requested", "instance", instanceLabel(args.Instance), "wait", args.Wait, "note", args.Note)
		run = func(ctx context.Context) (any, []string, error) {
			res, err := h.Drain(ctx, args)
			res.normalize()
			return res, nil, err
		}
	case CmdUndrain:
		var args instanceArgs
		if err := decodeArgs(req.Args, &args); err != nil {
			return Response{Error: "undrain: " + err.Error()}
		}
		log.Info("undrain requested", "instance", instanceLabel(args.Instance))
		run = func(ctx context.Context) (any, []string, error) {
			res, err := h.Undrain(ctx, args.Instance)
			res.normalize()
			return res, nil, err
		}
	case CmdReload:
		if err := decodeArgs(req.Args, &struct{}{}); err != nil {
			return Response{Error: "reload: " + err.Error()}
		}
		log.Info("reload requested")
		run = func(ctx context.Context) (any, []string, error) {
			res, err := h.Reload(ctx)
			res.normalize()
			return res, res.Problems, err
		}
	case "":
		return Response{Error: fmt.Sprintf("malformed request: no command (commands: %s)", strings.Join(commands, ", "))}
	default:
		return Response{Error: fmt.Sprintf("unknown command %q (commands: %s)", req.Command, strings.Join(commands, ", "))}
	}

	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	result, problems, err := run(hctx)
	if err != nil {
		log.Info("control command failed", "error", err, "problems", len(problems))
		resp = Response{Error: err.Error(), Problems: problems}
		// A refused reload still has a result worth showing.
		if req.Command == CmdReload {
			resp.Result = marshalResult(log, result)
		}
		return resp
	}
	raw := marshalResult(log, result)
	if raw == nil {
		return Response{Error: "internal error: cannot encode the result (see the daemon's log)"}
	}
	resp = Response{OK: true, Result: raw}
	if req.Command == CmdStatus {
		resp.Daemon = s.daemon
		if s.daemon != nil && (s.host != nil || s.bgp != nil || s.drops != nil) {
			d := *s.daemon
			if s.host != nil {
				d.Host = s.host()
			}
			if s.bgp != nil {
				d.BGPPeers = s.bgp()
			}
			if s.drops != nil {
				if drops := s.drops(); len(drops) > 0 {
					d.InterfaceDrops = drops
				}
			}
			resp.Daemon = &d
		}
	}
	return resp
}

func marshalResult(log *slog.Logger, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		log.Error("control: encoding result", "error", err)
		return nil
	}
	return b
}

// reply writes the response; a client too slow to take it loses it.
func (s *Server) reply(conn net.Conn, resp Response) {
	if !resp.OK && resp.Error == "" {
		resp.Error = "unknown error"
	}
	if err := conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return
	}
	if err := json.NewEncoder(conn).Encode(resp); err != nil {
		s.log.Debug("control socket: writing response", "error", err)
	}
}

// decodeStrict rejects unknown fields and trailing data, so a typo in a
// script ("instnace") is an error instead of a drain of every instance.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more than one JSON value")
	}
	return nil
}

func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := decodeStrict(raw, v); err != nil {
		return fmt.Errorf("bad args: %w", err)
	}
	return nil
}

func instanceLabel(name string) string {
	if name == "" {
		return "all"
	}
	return name
}

// nonNil makes an empty list encode as [] rather than null, which scripts
// would have to special-case.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (st *InstanceStatus) normalize() {
	st.VIPs = nonNil(st.VIPs)
	st.Trackers = nonNil(st.Trackers)
	st.Warnings = nonNil(st.Warnings)
	st.Priority.Parts = nonNil(st.Priority.Parts)
	if st.Counters.Drops == nil {
		st.Counters.Drops = map[string]uint64{}
	}
}

func (r *DrainResult) normalize() { r.Instances = nonNil(r.Instances) }

func (r *ReloadResult) normalize() {
	r.Problems = nonNil(r.Problems)
	r.Changes = nonNil(r.Changes)
}
