package health

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTypeString(t *testing.T) {
	for _, tc := range []struct {
		t    Type
		want string
	}{
		{typeInvalid, "invalid"}, {HTTP, "http"}, {Exec, "exec"}, {File, "file"},
		{Interface, "interface"}, {numTypes, "invalid"}, {Type(200), "invalid"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("Type(%d).String() = %q, want %q", tc.t, got, tc.want)
		}
	}
	for _, typ := range []Type{HTTP, Exec, File, Interface} {
		if got, err := ParseType(typ.String()); err != nil || got != typ {
			t.Errorf("ParseType(%q) = %v, %v; want %v", typ.String(), got, err, typ)
		}
	}
	for _, s := range []string{"", "invalid", "HTTP", "script"} {
		if _, err := ParseType(s); err == nil {
			t.Errorf("ParseType(%q) succeeded", s)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	got := Spec{Type: HTTP}.WithDefaults()
	want := Spec{Type: HTTP, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second, OKStatus: []int{200}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithDefaults() (-want +got):\n%s", diff)
	}
	// A short interval gets half of it as timeout, so the default is valid.
	if got := (Spec{Type: File, Interval: 500 * time.Millisecond}).WithDefaults(); got.Timeout != 250*time.Millisecond || got.OKStatus != nil {
		t.Errorf("WithDefaults() with a 500ms interval = timeout %v, ok_status %v; want 250ms, none", got.Timeout, got.OKStatus)
	}
	// Explicit values stay.
	set := Spec{Type: HTTP, Fall: 1, Rise: 5, Interval: time.Minute, Timeout: 10 * time.Second, OKStatus: []int{204}}
	if diff := cmp.Diff(set, set.WithDefaults()); diff != "" {
		t.Errorf("WithDefaults() changed set fields (-want +got):\n%s", diff)
	}
}

// fieldKeys lists the keys of the FieldErrors in err, in order.
func fieldKeys(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var keys []string
	for _, e := range errs {
		fe, ok := errors.AsType[*FieldError](e)
		if !ok {
			t.Fatalf("%v is not a *FieldError", e)
		}
		keys = append(keys, fe.Key)
	}
	return keys
}

func TestValidate(t *testing.T) {
	pki := newTestPKI(t)
	base := map[Type]Spec{
		HTTP:      {Name: "apiserver", Type: HTTP, Weight: -50, URL: "https://127.0.0.1:6443/readyz", OKStatus: []int{200, 401}},
		Exec:      {Name: "etcd", Type: Exec, Weight: 0, Command: []string{"sh", "-c", "exit 0"}},
		File:      {Name: "drain", Type: File, Weight: -254, Path: "/etc/vipd/drain"},
		Interface: {Name: "uplink", Type: Interface, Weight: -20, Interface: "eth1"},
	}
	for _, tc := range []struct {
		name string
		typ  Type
		edit func(*Spec)
		want []string // keys with a problem, in Validate's order
		msg  string   // a phrase the first problem must contain
	}{
		{name: "http ok", typ: HTTP},
		{name: "exec ok", typ: Exec},
		{name: "file ok", typ: File},
		{name: "interface ok", typ: Interface},
		{name: "https with everything", typ: HTTP, edit: func(s *Spec) {
			s.CAFile, s.CertFile, s.KeyFile, s.ServerName = pki.caFile, pki.certFile, pki.keyFile, "kubernetes"
		}},
		{name: "https insecure", typ: HTTP, edit: func(s *Spec) { s.InsecureSkipVerify = true }},
		{name: "plain http", typ: HTTP, edit: func(s *Spec) { s.URL = "http://127.0.0.1:10256/healthz" }},
		{name: "default ok_status", typ: HTTP, edit: func(s *Spec) { s.OKStatus = nil }},
		{name: "absolute command", typ: Exec, edit: func(s *Spec) { s.Command = []string{"/bin/sh", "-c", "true"} }},
		{name: "weight limits", typ: File, edit: func(s *Spec) { s.Weight = 254 }},
		{name: "fall and rise 1", typ: File, edit: func(s *Spec) { s.Fall, s.Rise = 1, 1 }},
		{name: "interval limits", typ: File, edit: func(s *Spec) { s.Interval, s.Timeout = MinInterval, MinInterval-1 }},

		{name: "empty name", typ: File, edit: func(s *Spec) { s.Name = "" }, want: []string{"name"}, msg: "empty"},
		{name: "long name", typ: File, edit: func(s *Spec) { s.Name = strings.Repeat("a", 33) }, want: []string{"name"}, msg: "longer than 32"},
		{name: "name with space", typ: File, edit: func(s *Spec) { s.Name = "api server" }, want: []string{"name"}, msg: "may only contain"},
		{name: "no type", typ: File, edit: func(s *Spec) { s.Type = typeInvalid; s.Path = "" }, want: []string{"type"}},
		{name: "bad type", typ: File, edit: func(s *Spec) { s.Type = numTypes; s.Path = "" }, want: []string{"type"}},
		{name: "weight low", typ: File, edit: func(s *Spec) { s.Weight = -255 }, want: []string{"weight"}, msg: "weight -255 out of range -254..254"},
		{name: "weight high", typ: File, edit: func(s *Spec) { s.Weight = 255 }, want: []string{"weight"}},
		{name: "fall 0", typ: File, edit: func(s *Spec) { s.Fall = 0 }, want: []string{"fall"}, msg: "fall 0 out of range 1..100"},
		{name: "rise too big", typ: File, edit: func(s *Spec) { s.Rise = 101 }, want: []string{"rise"}},
		{name: "interval too short", typ: File, edit: func(s *Spec) { s.Interval, s.Timeout = 10*time.Millisecond, time.Millisecond }, want: []string{"interval"}},
		{name: "interval too long", typ: File, edit: func(s *Spec) { s.Interval = 2 * time.Hour }, want: []string{"interval"}, msg: "interval 2h out of range 100ms..1h"},
		{name: "interval too short, timeout longer", typ: File, edit: func(s *Spec) { s.Interval, s.Timeout = 10*time.Millisecond, time.Second }, want: []string{"interval"}},
		{name: "timeout 0", typ: File, edit: func(s *Spec) { s.Timeout = 0 }, want: []string{"timeout"}, msg: "timeout 0s must be more than 0s"},
		{name: "timeout = interval", typ: File, edit: func(s *Spec) { s.Timeout = s.Interval }, want: []string{"timeout"}, msg: "timeout 2s must be shorter than the interval (2s)"},

		{name: "no url", typ: HTTP, edit: func(s *Spec) { s.URL = "" }, want: []string{"url"}},
		{name: "unparsable url", typ: HTTP, edit: func(s *Spec) { s.URL = "https://[::1" }, want: []string{"url"}},
		{name: "ftp url", typ: HTTP, edit: func(s *Spec) { s.URL = "ftp://127.0.0.1/x" }, want: []string{"url"}, msg: "http or https"},
		{name: "url without host", typ: HTTP, edit: func(s *Spec) { s.URL = "https:///readyz" }, want: []string{"url"}, msg: "no host"},
		{name: "url with password", typ: HTTP, edit: func(s *Spec) { s.URL = "https://admin:secret@127.0.0.1/" }, want: []string{"url"}, msg: "credentials"},
		{name: "bad status", typ: HTTP, edit: func(s *Spec) { s.OKStatus = []int{200, 99, 600} }, want: []string{"ok_status", "ok_status"}},
		{name: "tls keys on http", typ: HTTP, edit: func(s *Spec) {
			s.URL = "http://127.0.0.1/"
			s.CAFile, s.CertFile, s.KeyFile, s.InsecureSkipVerify, s.ServerName = pki.caFile, pki.certFile, pki.keyFile, true, "x"
		}, want: []string{"ca_file", "cert_file", "key_file", "insecure_skip_verify", "server_name"}, msg: "only to https"},
		{name: "insecure with ca", typ: HTTP, edit: func(s *Spec) { s.InsecureSkipVerify, s.CAFile = true, pki.caFile }, want: []string{"insecure_skip_verify"}},
		{name: "missing ca", typ: HTTP, edit: func(s *Spec) { s.CAFile = filepath.Join(t.TempDir(), "none.crt") }, want: []string{"ca_file"}, msg: "no such file"},
		{name: "garbage ca", typ: HTTP, edit: func(s *Spec) { s.CAFile = pki.garbageFile }, want: []string{"ca_file"}, msg: "no PEM certificate"},
		{name: "cert without key", typ: HTTP, edit: func(s *Spec) { s.CertFile = pki.certFile }, want: []string{"cert_file"}, msg: "both or neither"},
		{name: "key without cert", typ: HTTP, edit: func(s *Spec) { s.KeyFile = pki.keyFile }, want: []string{"cert_file"}},
		{name: "mismatched pair", typ: HTTP, edit: func(s *Spec) { s.CertFile, s.KeyFile = pki.mismatchedCert, pki.mismatchedKey }, want: []string{"cert_file"}, msg: "loading the pair"},

		{name: "no command", typ: Exec, edit: func(s *Spec) { s.Command = nil }, want: []string{"command"}, msg: "argv"},
		{name: "empty argv0", typ: Exec, edit: func(s *Spec) { s.Command = []string{"", "x"} }, want: []string{"command"}},
		{name: "relative command", typ: Exec, edit: func(s *Spec) { s.Command = []string{"./check.sh"} }, want: []string{"command"}, msg: "relative path"},
		{name: "unknown command", typ: Exec, edit: func(s *Spec) { s.Command = []string{"vipd-no-such-check"} }, want: []string{"command"}, msg: "not found"},
		{name: "missing absolute command", typ: Exec, edit: func(s *Spec) { s.Command = []string{filepath.Join(t.TempDir(), "check")} }, want: []string{"command"}},
		{name: "shell string", typ: Exec, edit: func(s *Spec) { s.Command = []string{"curl -k https://127.0.0.1:6443/readyz"} }, want: []string{"command"}},

		{name: "no path", typ: File, edit: func(s *Spec) { s.Path = "" }, want: []string{"path"}},
		{name: "relative path", typ: File, edit: func(s *Spec) { s.Path = "drain" }, want: []string{"path"}, msg: "absolute"},

		{name: "no interface", typ: Interface, edit: func(s *Spec) { s.Interface = "" }, want: []string{"interface"}},
		{name: "long interface", typ: Interface, edit: func(s *Spec) { s.Interface = "abcdefghijklmnop" }, want: []string{"interface"}, msg: "15"},
		{name: "interface with slash", typ: Interface, edit: func(s *Spec) { s.Interface = "eth0/1" }, want: []string{"interface"}},
		{name: "interface dot", typ: Interface, edit: func(s *Spec) { s.Interface = ".." }, want: []string{"interface"}},

		{name: "foreign keys on file", typ: File, edit: func(s *Spec) {
			s.URL, s.OKStatus, s.Command, s.Interface = "http://x/", []int{200}, []string{"true"}, "eth0"
		}, want: []string{"url", "ok_status", "command", "interface"}, msg: `applies only to type = "http", not "file"`},
		{name: "path on exec", typ: Exec, edit: func(s *Spec) { s.Path = "/etc/vipd/drain" }, want: []string{"path"}},
		{name: "several problems", typ: HTTP, edit: func(s *Spec) { s.Name, s.Fall, s.URL = "", -1, "" }, want: []string{"name", "fall", "url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base[tc.typ]
			s.OKStatus = slices.Clone(s.OKStatus)
			s = s.WithDefaults()
			if tc.edit != nil {
				tc.edit(&s)
			}
			err := s.Validate()
			if diff := cmp.Diff(tc.want, fieldKeys(t, err)); diff != "" {
				t.Fatalf("Validate() = %v; keys (-want +got):\n%s", err, diff)
			}
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Validate() = %q, want it to mention %q", err, tc.msg)
			}
			// NewChecker refuses exactly what Validate refuses.
			c, nerr := NewChecker(s)
			if (err == nil) != (nerr == nil) || (nerr == nil) != (c != nil) {
				t.Errorf("NewChecker() = %v, %v; Validate() = %v", c, nerr, err)
			}
		})
	}
}
