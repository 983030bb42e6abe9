package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Attribute keys for log records.
const (
	keyAddress = "address"
	keyError   = "error"
)

// HTTP server limits: a scrape is one small GET, so anything slow is a
// client holding a connection open.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 16 << 10
	// shutdownTimeout is how long Serve waits for scrapes in flight once
	// its context ends.
	shutdownTimeout = 5 * time.Second
)

const indexPage = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>vipd</title></head>
<body><h1>vipd</h1><p><a href="metrics">Metrics</a></p></body></html>
`

// Serve listens on addr, e.g. "127.0.0.1:9650", and serves /metrics and a
// small index page at / until ctx ends. It then shuts the server down
// gracefully and returns nil. A failure to listen is returned at once, as
// is an empty addr (which net.Listen would take for a random port on every
// address): a caller with metrics_listen unset does not call Serve.
func (m *Metrics) Serve(ctx context.Context, addr string, log *slog.Logger) error {
	if addr == "" {
		return errors.New("metrics: no listen address")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return m.serve(ctx, ln, log)
}

// serve is Serve on a listener it takes over and closes.
func (m *Metrics) serve(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := &http.Server{
		Handler:           m.mux(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving metrics", keyAddress, ln.Addr().String())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("metrics: %w", err)
	case <-ctx.Done():
	}

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		// A scrape outlived the grace period: cut it. The server still
		// stopped as asked, so this is no failure of Serve.
		log.Warn("metrics server did not shut down gracefully", keyError, err)
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("metrics server stopped", keyError, err)
	}
	return nil
}

func (m *Metrics) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.handler)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(indexPage))
	})
	return mux
}
