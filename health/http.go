package health

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxBodyRead is how much of a response body is read, for the excerpt of a
// failure; the rest is discarded when the connection closes.
const maxBodyRead = 4 << 10

// httpChecker GETs one URL with a client built once.
//
// Keep-alive is off: every check dials, and for https shakes hands, afresh.
// That proves the server still accepts new clients (what a failing-over
// kubelet needs), and leaves no idle connection behind for anyone to close
// when the tracker stops. On a local API server the cost is a handshake per
// interval.
//
// Redirects are not followed: a 3xx is judged by ok_status like any other
// code. Following one could probe another host than the one the VIP fronts,
// and a health endpoint that redirects is misconfigured.
//
// Proxies from the environment are ignored: a probe of 127.0.0.1 through an
// HTTP_PROXY would test the proxy.
type httpChecker struct {
	url     string
	ok      []int
	timeout time.Duration
	client  *http.Client
}

func newHTTPChecker(s Spec) (*httpChecker, error) {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            (&net.Dialer{}).DialContext, // the check's context bounds it
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	if strings.HasPrefix(s.URL, "https:") {
		cfg := &tls.Config{
			MinVersion:         tls.VersionTLS12,
			ServerName:         s.ServerName,
			InsecureSkipVerify: s.InsecureSkipVerify, // the operator's explicit choice
		}
		if s.CAFile != "" {
			pool, err := loadCAs(s.CAFile)
			if err != nil {
				return nil, err
			}
			cfg.RootCAs = pool
		}
		if s.CertFile != "" {
			pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
			if err != nil {
				return nil, err
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		tr.TLSClientConfig = cfg
	}
	ok := s.OKStatus
	if len(ok) == 0 {
		ok = []int{http.StatusOK}
	}
	return &httpChecker{
		url:     s.URL,
		ok:      slices.Clone(ok),
		timeout: s.Timeout,
		client: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}, nil
}

func (c *httpChecker) Check(ctx context.Context) Result {
	ctx, cancel := withCheckTimeout(ctx, c.timeout)
	defer cancel()
	prefix := "GET " + c.url + ": "
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return Result{Detail: prefix + err.Error()}
	}
	req.Header.Set("User-Agent", "vipd-health")
	resp, err := c.client.Do(req)
	if err != nil {
		switch {
		case timedOut(ctx):
			return Result{Detail: prefix + "timeout after " + c.timeout.String()}
		case ctx.Err() != nil:
			return Result{Detail: prefix + "canceled"}
		}
		// The url.Error would repeat the method and URL.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return Result{Detail: prefix + err.Error()}
	}
	defer resp.Body.Close()
	status := strconv.Itoa(resp.StatusCode)
	if text := http.StatusText(resp.StatusCode); text != "" {
		status += " " + text
	}
	if slices.Contains(c.ok, resp.StatusCode) {
		return Result{OK: true, Detail: prefix + status}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyRead+1))
	return Result{Detail: withExcerpt(prefix+status, bodyExcerpt(body))}
}

// bodyExcerpt quotes a failed response. A Kubernetes health endpoint
// (/readyz, /livez) lists every check with "[+]" or "[-]": only the failed
// ones say why, so only those are quoted when present.
func bodyExcerpt(body []byte) string {
	more := len(body) > maxBodyRead
	body = body[:min(len(body), maxBodyRead)]
	var failed []string
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, strings.TrimSpace(line))
		}
	}
	if len(failed) > 0 {
		return excerpt(strings.Join(failed, "; "), false)
	}
	return excerpt(string(body), more)
}
