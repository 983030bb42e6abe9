package health

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// A Result is the outcome of one check.
type Result struct {
	OK bool
	// Detail says what happened in an operator's words, e.g.
	// "GET https://127.0.0.1:6443/readyz: 503 Service Unavailable",
	// "killed after timeout 2s" or "/etc/vipd/drain exists".
	Detail string
}

// A Checker runs one probe; it is called from one goroutine at a time.
// HTTP and exec checks bound themselves by the Spec's timeout and end early,
// failing, when ctx ends; file and interface checks are one local system
// call each.
type Checker interface {
	Check(ctx context.Context) Result
}

// NewChecker validates s and builds its probe: the HTTP client and TLS
// configuration once, the command's resolved path, and so on.
func NewChecker(s Spec) (Checker, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("tracker %s: %w", s.Name, err)
	}
	switch s.Type {
	case HTTP:
		return newHTTPChecker(s)
	case Exec:
		return newExecChecker(s)
	case File:
		return fileChecker{path: s.Path}, nil
	case Interface:
		return newInterfaceChecker(s.Interface), nil
	}
	return nil, fmt.Errorf("tracker %s: unknown type %v", s.Name, s.Type)
}

// errCheckTimeout is the cause of a check's own deadline, which tells "this
// probe was too slow" from "the daemon is stopping".
var errCheckTimeout = errors.New("check timed out")

func withCheckTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errCheckTimeout)
}

// timedOut reports whether ctx ended by the check's own deadline.
func timedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errCheckTimeout)
}

// maxExcerpt bounds the output or body quoted in a Detail: enough for an
// error message, not enough to flood the journal.
const maxExcerpt = 256

// excerpt makes s fit for one log line: invalid UTF-8 and control characters
// dropped, runs of space collapsed, at most maxExcerpt bytes, and "..."
// when something was cut.
func excerpt(s string, more bool) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r)
	}), " ")
	if len(s) > maxExcerpt {
		cut := maxExcerpt
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, more = s[:cut], true
	}
	if more && s != "" {
		s += "..."
	}
	return s
}

// headBuffer keeps the first max bytes written to it and discards the rest,
// while reporting every write as complete so the writer is never blocked or
// broken by a full buffer.
type headBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (b *headBuffer) Write(p []byte) (int, error) {
	n := min(b.max-len(b.buf), len(p))
	b.buf = append(b.buf, p[:n]...)
	if n < len(p) {
		b.truncated = true
	}
	return len(p), nil
}

// withExcerpt appends ": excerpt" to detail when there is one.
func withExcerpt(detail, ex string) string {
	if ex == "" {
		return detail
	}
	return detail + ": " + ex
}
