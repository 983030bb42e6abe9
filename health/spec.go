package health

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Type is the kind of probe a tracker runs.
type Type uint8

// Tracker types; the zero value is invalid so a forgotten field shows.
const (
	typeInvalid Type = iota
	// HTTP: a GET whose status must be one of the accepted codes.
	HTTP
	// Exec: a command that must exit 0.
	Exec
	// File: a drain switch, failing while the file exists.
	File
	// Interface: another interface that must be up.
	Interface
	numTypes
)

var typeNames = [numTypes]string{"invalid", "http", "exec", "file", "interface"}

func (t Type) String() string {
	if t >= numTypes {
		return typeNames[typeInvalid]
	}
	return typeNames[t]
}

// ParseType returns the Type named s, as written in the configuration.
func ParseType(s string) (Type, error) {
	for t := HTTP; t < numTypes; t++ {
		if typeNames[t] == s {
			return t, nil
		}
	}
	return typeInvalid, fmt.Errorf("unknown tracker type %q: want http, exec, file or interface", s)
}

// Defaults for the keys a tracker may leave out.
const (
	DefaultFall     = 3
	DefaultRise     = 2
	DefaultInterval = 2 * time.Second
	// DefaultTimeout applies when it is shorter than half the interval, and
	// half the interval otherwise, so a check always ends before the next.
	DefaultTimeout = time.Second
)

// Limits that Validate enforces.
const (
	MinWeight   = -254
	MaxWeight   = 254
	MaxStreak   = 100 // fall and rise
	MinInterval = 100 * time.Millisecond
	MaxInterval = time.Hour

	maxNameLen   = 32 // as the config package's instance names
	maxIfnameLen = 15 // IFNAMSIZ less the NUL
)

// A Spec is one tracker's configuration. The config package fills it from
// an [[instance.track]] table; Validate says what is wrong with it using the
// table's key names.
type Spec struct {
	Name string
	Type Type
	// Weight is added to the priority while healthy when positive, and
	// added (so subtracted) while failing when negative. Zero makes a
	// failing tracker demand Fault, which releases the VIP.
	Weight int
	// Fall is the number of consecutive failed checks that make a healthy
	// tracker failing; Rise the number of consecutive successes that make a
	// failing one healthy again.
	Fall, Rise int
	// Interval separates the starts of two checks; Timeout bounds one check
	// and must be shorter than Interval.
	Interval, Timeout time.Duration

	// HTTP.
	URL                string
	OKStatus           []int // empty means [200]
	CAFile             string
	CertFile, KeyFile  string
	InsecureSkipVerify bool
	// ServerName is the name to verify the server's certificate against
	// when it is not the URL's host, e.g. "kubernetes" for an API server
	// reached at 127.0.0.1 whose certificate does not list that address.
	ServerName string

	// Exec: the argv, run without a shell.
	Command []string

	// File: the drain switch.
	Path string

	// Interface: the name of the interface that must be up.
	Interface string
}

// WithDefaults returns s with its zero fields set to their defaults. It
// cannot tell an explicit 0 from a missing key: a caller that must reject
// "fall = 0" checks the key before calling it.
func (s Spec) WithDefaults() Spec {
	if s.Fall == 0 {
		s.Fall = DefaultFall
	}
	if s.Rise == 0 {
		s.Rise = DefaultRise
	}
	if s.Interval == 0 {
		s.Interval = DefaultInterval
	}
	if s.Timeout == 0 {
		s.Timeout = min(DefaultTimeout, s.Interval/2)
	}
	if s.Type == HTTP && len(s.OKStatus) == 0 {
		s.OKStatus = []int{200}
	}
	return s
}

// A FieldError is one problem with one key of a tracker's table. Validate
// and CheckLimits return them joined (errors.Join); a caller that reports
// problems by key, with line numbers, unwraps them with errors.As or
// Unwrap() []error, and may show the value as the operator wrote it in
// place of Value.
type FieldError struct {
	Key string // the configuration key, e.g. "ok_status"
	// Value is the offending value as this package formats it ("255",
	// "99ms"), or "" when the problem is not about one value.
	Value   string
	Problem string // e.g. "out of range 1..100"
}

func (e *FieldError) Error() string {
	if e.Value == "" {
		return e.Key + ": " + e.Problem
	}
	return e.Key + " " + e.Value + " " + e.Problem
}

// CheckLimits reports the problems of the numbers every tracker has:
// weight, fall, rise, interval and timeout. It is the one place of these
// rules: Validate applies it, and the config package maps its errors to the
// lines of the keys.
func (s Spec) CheckLimits() error { return errors.Join(s.limitErrors()...) }

func (s Spec) limitErrors() []error {
	var errs []error
	outside := func(key, value, lo, hi string) {
		errs = append(errs, &FieldError{Key: key, Value: value, Problem: "out of range " + lo + ".." + hi})
	}
	if s.Weight < MinWeight || s.Weight > MaxWeight {
		outside("weight", strconv.Itoa(s.Weight), strconv.Itoa(MinWeight), strconv.Itoa(MaxWeight))
	}
	if s.Fall < 1 || s.Fall > MaxStreak {
		outside("fall", strconv.Itoa(s.Fall), "1", strconv.Itoa(MaxStreak))
	}
	if s.Rise < 1 || s.Rise > MaxStreak {
		outside("rise", strconv.Itoa(s.Rise), "1", strconv.Itoa(MaxStreak))
	}
	intervalOK := s.Interval >= MinInterval && s.Interval <= MaxInterval
	if !intervalOK {
		outside("interval", shortDuration(s.Interval), shortDuration(MinInterval), shortDuration(MaxInterval))
	}
	switch {
	case s.Timeout <= 0:
		errs = append(errs, &FieldError{Key: "timeout", Value: shortDuration(s.Timeout), Problem: "must be more than 0s"})
	case intervalOK && s.Timeout >= s.Interval:
		// (Against an interval out of range the comparison says nothing.)
		errs = append(errs, &FieldError{Key: "timeout", Value: shortDuration(s.Timeout),
			Problem: "must be shorter than the interval (" + shortDuration(s.Interval) + "), so that one check ends before the next starts"})
	}
	return errs
}

// shortDuration drops the zero units time.Duration.String adds: 1h, not 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Validate reports every problem with s, or nil. It reads the TLS files and
// looks up the command, so whatever would make NewChecker fail shows here,
// in the operator's terms, before the daemon starts.
func (s Spec) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Problem: fmt.Sprintf(format, args...)})
	}

	switch {
	case s.Name == "":
		add("name", "is empty")
	case len(s.Name) > maxNameLen:
		add("name", "%q is longer than %d characters", s.Name, maxNameLen)
	case strings.ContainsFunc(s.Name, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}):
		add("name", "%q may only contain A-Z, a-z, 0-9, '_', '.' and '-'", s.Name)
	}
	if s.Type == typeInvalid || s.Type >= numTypes {
		add("type", "is missing or unknown: want http, exec, file or interface")
	}
	errs = append(errs, s.limitErrors()...)

	// Keys of another type are mistakes (a typo in "type", or a table
	// pasted from another tracker), not options to ignore.
	foreign := func(key string, set bool, owner Type) {
		if set && s.Type != owner && s.Type > typeInvalid && s.Type < numTypes {
			add(key, "applies only to type = %q, not %q", owner, s.Type)
		}
	}
	foreign("url", s.URL != "", HTTP)
	foreign("ok_status", len(s.OKStatus) > 0, HTTP)
	foreign("ca_file", s.CAFile != "", HTTP)
	foreign("cert_file", s.CertFile != "", HTTP)
	foreign("key_file", s.KeyFile != "", HTTP)
	foreign("insecure_skip_verify", s.InsecureSkipVerify, HTTP)
	foreign("server_name", s.ServerName != "", HTTP)
	foreign("command", len(s.Command) > 0, Exec)
	foreign("path", s.Path != "", File)
	foreign("interface", s.Interface != "", Interface)

	switch s.Type {
	case HTTP:
		errs = append(errs, s.validateHTTP()...)
	case Exec:
		switch {
		case len(s.Command) == 0 || s.Command[0] == "":
			add("command", "is empty: want an argv list such as [\"/usr/local/bin/check\", \"--quick\"]")
		case strings.Contains(s.Command[0], "/") && !filepath.IsAbs(s.Command[0]):
			add("command", "%q is a relative path: give an absolute path or a name to look up in PATH", s.Command[0])
		default:
			if _, err := exec.LookPath(s.Command[0]); err != nil {
				add("command", "%v", err)
			}
		}
	case File:
		switch {
		case s.Path == "":
			add("path", "is empty")
		case !filepath.IsAbs(s.Path):
			add("path", "%q is not an absolute path", s.Path)
		}
	case Interface:
		switch {
		case s.Interface == "":
			add("interface", "is empty")
		case len(s.Interface) > maxIfnameLen:
			add("interface", "%q is longer than %d characters, the Linux limit", s.Interface, maxIfnameLen)
		case s.Interface == "." || s.Interface == ".." || strings.ContainsAny(s.Interface, "/: \t\n\v\f\r"):
			add("interface", "%q is not a valid interface name", s.Interface)
		}
	}
	return errors.Join(errs...)
}

func (s Spec) validateHTTP() []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Problem: fmt.Sprintf(format, args...)})
	}
	plain := false // an http URL, for which TLS keys are mistakes
	if s.URL == "" {
		add("url", "is empty")
	} else if u, err := url.Parse(s.URL); err != nil {
		add("url", "%v", err)
	} else {
		switch {
		case u.Scheme != "http" && u.Scheme != "https":
			add("url", "%q: the scheme must be http or https", s.URL)
		case u.Host == "":
			add("url", "%q has no host", s.URL)
		case u.User != nil:
			// Every change is logged with the URL.
			add("url", "must not carry credentials: they would be logged")
		}
		plain = u.Scheme == "http"
	}
	for _, c := range s.OKStatus {
		if c < 100 || c > 599 {
			add("ok_status", "%d is not an HTTP status code (100..599)", c)
		}
	}
	if plain {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"ca_file", s.CAFile != ""}, {"cert_file", s.CertFile != ""}, {"key_file", s.KeyFile != ""},
			{"insecure_skip_verify", s.InsecureSkipVerify}, {"server_name", s.ServerName != ""},
		} {
			if k.set {
				add(k.key, "applies only to https URLs")
			}
		}
		return errs
	}
	if s.InsecureSkipVerify && (s.CAFile != "" || s.ServerName != "") {
		add("insecure_skip_verify", "contradicts ca_file and server_name, which only matter when the server's certificate is verified")
	}
	if s.CAFile != "" {
		if _, err := loadCAs(s.CAFile); err != nil {
			add("ca_file", "%v", err)
		}
	}
	switch {
	case (s.CertFile == "") != (s.KeyFile == ""):
		add("cert_file", "cert_file and key_file go together: set both or neither")
	case s.CertFile != "":
		if _, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile); err != nil {
			add("cert_file", "loading the pair %s and %s: %v", s.CertFile, s.KeyFile, err)
		}
	}
	return errs
}

func loadCAs(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate in %s", file)
	}
	return pool, nil
}
