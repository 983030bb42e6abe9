package health

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func httpSpec(url string) Spec {
	return Spec{Name: "apiserver", Type: HTTP, Weight: -50, URL: url}.WithDefaults()
}

func mustChecker(t *testing.T, s Spec) Checker {
	t.Helper()
	c, err := NewChecker(s)
	if err != nil {
		t.Fatalf("NewChecker: %v", err)
	}
	return c
}

func checkResult(t *testing.T, c Checker, wantOK bool, wantDetail string) {
	t.Helper()
	got := c.Check(t.Context())
	if got.OK != wantOK || got.Detail != wantDetail {
		t.Errorf("Check() = %+v, want OK %v, Detail %q", got, wantOK, wantDetail)
	}
}

func TestHTTPStatus(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.UserAgent() != "vipd-health" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
		}
	})
	mux.HandleFunc("/unauthorized", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"kind":"Status","reason":"Unauthorized"}`, http.StatusUnauthorized)
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		// What kube-apiserver answers while etcd is unreachable.
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]poststarthook/start-apiextensions-informers ok\n[-]informer-sync failed: reason withheld\nreadyz check failed\n")
	})
	mux.HandleFunc("/unavailable", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, strings.Repeat("x", 100_000))
	})
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(599) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		path   string
		ok     []int
		wantOK bool
		want   string // after "GET url: "
	}{
		{path: "/ok", wantOK: true, want: "200 OK"},
		{path: "/unauthorized", want: "401 Unauthorized: {\"kind\":\"Status\",\"reason\":\"Unauthorized\"}"},
		{path: "/unauthorized", ok: []int{200, 401}, wantOK: true, want: "401 Unauthorized"},
		{path: "/readyz", want: "500 Internal Server Error: [-]etcd failed: reason withheld; [-]informer-sync failed: reason withheld"},
		{path: "/unavailable", want: "503 Service Unavailable: " + strings.Repeat("x", maxExcerpt) + "..."},
		{path: "/teapot", want: "599"},
		// Redirects are judged, not followed.
		{path: "/moved", want: "302 Found: <a href=\"/ok\">Found</a>."},
		{path: "/moved", ok: []int{302}, wantOK: true, want: "302 Found"},
		{path: "/missing", want: "404 Not Found: 404 page not found"},
	} {
		s := httpSpec(srv.URL + tc.path)
		if tc.ok != nil {
			s.OKStatus = tc.ok
		}
		checkResult(t, mustChecker(t, s), tc.wantOK, "GET "+srv.URL+tc.path+": "+tc.want)
	}
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	s := httpSpec(srv.URL + "/readyz")
	s.Timeout = 50 * time.Millisecond
	c := mustChecker(t, s)
	checkResult(t, c, false, "GET "+srv.URL+"/readyz: timeout after 50ms")

	// The daemon stopping is not a timeout.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if got := c.Check(ctx); got.OK || got.Detail != "GET "+srv.URL+"/readyz: canceled" {
		t.Errorf("Check(canceled) = %+v", got)
	}
}

func TestHTTPRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	got := mustChecker(t, httpSpec("http://"+addr+"/readyz")).Check(t.Context())
	if got.OK || !strings.HasPrefix(got.Detail, "GET http://"+addr+"/readyz: dial tcp "+addr+": ") || !strings.Contains(got.Detail, "refused") {
		t.Errorf("Check() = %+v, want a refused dial", got)
	}
}

func TestHTTPTLS(t *testing.T) {
	pki := newTestPKI(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "vipd" {
			http.Error(w, "no client certificate", http.StatusForbidden)
		}
	}))
	srv.TLS = pki.serverTLS()
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake failures are the point here
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + "/readyz"
	prefix := "GET " + url + ": "

	for _, tc := range []struct {
		name   string
		edit   func(*Spec)
		wantOK bool
		want   string // Detail after the prefix, or a part of it when !wantOK
	}{
		{name: "verified both ways", wantOK: true, want: "200 OK", edit: func(s *Spec) {
			s.CAFile, s.ServerName, s.CertFile, s.KeyFile = pki.caFile, "kubernetes", pki.certFile, pki.keyFile
		}},
		{name: "insecure still sends the client certificate", wantOK: true, want: "200 OK", edit: func(s *Spec) {
			s.InsecureSkipVerify, s.CertFile, s.KeyFile = true, pki.certFile, pki.keyFile
		}},
		{name: "name mismatch without server_name", want: "x509: cannot validate certificate for 127.0.0.1", edit: func(s *Spec) {
			s.CAFile, s.CertFile, s.KeyFile = pki.caFile, pki.certFile, pki.keyFile
		}},
		{name: "unknown authority", want: "x509: certificate signed by unknown authority", edit: func(s *Spec) {
			s.CAFile, s.ServerName, s.CertFile, s.KeyFile = pki.otherCAFile, "kubernetes", pki.certFile, pki.keyFile
		}},
		{name: "system roots do not know the test CA", want: "x509: certificate signed by unknown authority", edit: func(s *Spec) {
			s.ServerName, s.CertFile, s.KeyFile = "kubernetes", pki.certFile, pki.keyFile
		}},
		{name: "no client certificate", want: "certificate required", edit: func(s *Spec) {
			s.CAFile, s.ServerName = pki.caFile, "kubernetes"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := httpSpec(url)
			tc.edit(&s)
			got := mustChecker(t, s).Check(t.Context())
			t.Logf("Detail: %s", got.Detail)
			if tc.wantOK {
				if !got.OK || got.Detail != prefix+tc.want {
					t.Errorf("Check() = %+v, want OK %q", got, prefix+tc.want)
				}
				return
			}
			if got.OK || !strings.HasPrefix(got.Detail, prefix) || !strings.Contains(got.Detail, tc.want) {
				t.Errorf("Check() = %+v, want a failure mentioning %q", got, tc.want)
			}
		})
	}
}
