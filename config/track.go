package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vipd/vipd/health"
)

// Defaults of [[instance.track]] that are policy of the file, and the
// limits of [instance.notify]. The limits of a tracker's numbers (weight,
// fall, rise, interval, timeout) and their defaults are the health
// package's: track maps its errors to the keys' lines, so a file vipd check
// accepts is one the daemon accepts too.
const (
	// A failing http, exec or interface tracker lowers the priority by 50:
	// below an equally configured healthy peer, so the VIP moves to it, but
	// not out of the election, so when every host fails alike the VIP
	// stays where it is.
	defaultTrackWeight = -50
	// A file tracker is the operator's drain switch: while the file exists
	// the instance is in Fault and releases the VIP, whatever the peers'
	// priorities.
	defaultDrainWeight = 0

	defaultNotifyTimeout = 10 * time.Second
	maxNotifyTimeout     = 10 * time.Minute

	maxGroupLen = 32
)

// trackTypes are the values of a tracker's type, in the order messages list
// them.
var trackTypes = []string{"http", "exec", "file", "interface"}

// tracks checks an instance's [[instance.track]] tables; at is the path of
// the array. Names must be unique within the instance.
func (c *checker) tracks(at string, raws []rawTrack) []Track {
	var ts []Track
	names := map[string]int{}
	for j := range raws {
		p := elemPath(at, j)
		t := c.track(p, &raws[j])
		if t.Name != "" {
			if first, ok := names[t.Name]; ok {
				c.add(keyPath(p, "name"), "name %q is already used at line %d", t.Name, c.line(keyPath(elemPath(at, first), "name")))
			} else {
				names[t.Name] = j
			}
		}
		ts = append(ts, t)
	}
	return ts
}

// track checks one [[instance.track]] table at path at.
func (c *checker) track(at string, r *rawTrack) Track {
	t := Track{Fall: health.DefaultFall, Rise: health.DefaultRise, Interval: health.DefaultInterval, Line: c.line(at)}
	key := func(name string) string { return keyPath(at, name) }

	c.need(r.Name, key("name"))
	if s, ok := c.checkedStr(r.Name, key("name"), nameProblem); ok {
		t.Name = s
	}

	c.need(r.Type, key("type"))
	if s, ok := c.str(r.Type, key("type")); ok {
		if slices.Contains(trackTypes, s) {
			t.Type = s
		} else {
			c.add(key("type"), "type %q is not one of %s", s, strings.Join(trackTypes, ", "))
		}
	}

	// Keys of another type are mistakes (a typo in type, or a table pasted
	// from another tracker), not options to ignore. When the type is not
	// known, every key's value is still checked.
	belongs := func(name string, f field, types ...string) bool {
		if !f.set || t.Type == "" || slices.Contains(types, t.Type) {
			return f.set
		}
		what := fmt.Sprintf("type %q", types[0])
		if len(types) == 2 {
			what = fmt.Sprintf("types %q and %q", types[0], types[1])
		}
		c.add(key(name), "key %q is for %s, not %q", name, what, t.Type)
		return false
	}

	t.Weight = defaultTrackWeight
	if t.Type == "file" {
		t.Weight = defaultDrainWeight
	}
	c.trackLimits(at, r, &t, belongs("timeout", r.Timeout, "http", "exec"))

	c.trackHTTP(at, r, &t, belongs)

	if belongs("command", r.Command, "exec") {
		t.Command, _ = c.argv(r.Command, key("command"), true)
	}
	if belongs("path", r.Path, "file") {
		if s, ok := c.str(r.Path, key("path")); ok {
			if msg := absPathProblem(s); msg != "" {
				c.add(key("path"), "path %s", msg)
			} else {
				t.Path = s
			}
		}
	}
	if belongs("interface", r.Interface, "interface") {
		if s, ok := c.checkedStr(r.Interface, key("interface"), ifnameProblem); ok {
			t.Interface = s
		}
	}

	// The keys each type needs.
	needFor := func(name string, f field) {
		if !f.set {
			c.add(key(name), "missing required key %q for type %q", name, t.Type)
		}
	}
	switch t.Type {
	case "http":
		needFor("url", r.URL)
	case "exec":
		needFor("command", r.Command)
	case "file":
		needFor("path", r.Path)
	case "interface":
		needFor("interface", r.Interface)
	}
	return t
}

// trackLimits reads a tracker's numbers (weight, fall, rise, interval and,
// when its type has one, timeout) and reports what health.Spec.CheckLimits
// finds wrong with them at each key's line, with the value as written. A
// key that is not a number of the right type is reported here and checked
// no further.
func (c *checker) trackLimits(at string, r *rawTrack, t *Track, hasTimeout bool) {
	key := func(name string) string { return keyPath(at, name) }
	raws := map[string]field{"weight": r.Weight, "fall": r.Fall, "rise": r.Rise, "interval": r.Interval, "timeout": r.Timeout}
	bad := map[string]bool{} // of the wrong type: its default stands in
	integer := func(name string, dst *int) {
		if n, ok := c.integer(raws[name], key(name)); ok {
			*dst = int(n)
		} else if raws[name].set {
			bad[name] = true
		}
	}
	duration := func(name string, dst *time.Duration) {
		if d, ok := c.anyDuration(raws[name], key(name)); ok {
			*dst = d
		} else if raws[name].set {
			bad[name] = true
		}
	}
	integer("weight", &t.Weight)
	integer("fall", &t.Fall)
	integer("rise", &t.Rise)
	duration("interval", &t.Interval)
	t.Timeout = health.Spec{Interval: t.Interval}.WithDefaults().Timeout
	if hasTimeout {
		duration("timeout", &t.Timeout)
	}
	spec := health.Spec{Weight: t.Weight, Fall: t.Fall, Rise: t.Rise, Interval: t.Interval, Timeout: t.Timeout}
	for _, err := range unjoin(spec.CheckLimits()) {
		fe, ok := errors.AsType[*health.FieldError](err)
		// A timeout compared with the default that stands in for a bad
		// interval says nothing.
		if !ok || bad[fe.Key] || fe.Key == "timeout" && bad["interval"] && t.Timeout > 0 {
			continue
		}
		if f := raws[fe.Key]; f.set {
			c.add(key(fe.Key), "%s %s %s", fe.Key, written(f), fe.Problem)
		} else {
			c.add(key(fe.Key), "%v (the default)", fe)
		}
	}
}

// unjoin returns the errors joined in err (errors.Join), or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// written shows a value as the file has it: strings quoted, numbers bare.
func written(f field) string {
	if s, ok := f.val.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(f.val)
}

// trackHTTP checks the keys of an http tracker.
func (c *checker) trackHTTP(at string, r *rawTrack, t *Track, belongs func(string, field, ...string) bool) {
	key := func(name string) string { return keyPath(at, name) }

	scheme := "" // of a valid URL
	if belongs("url", r.URL, "http") {
		if s, ok := c.str(r.URL, key("url")); ok {
			if u, msg := parseURL(s); msg != "" {
				c.add(key("url"), "%s", msg)
			} else {
				t.URL, scheme = s, u.Scheme
			}
		}
	}

	if t.Type == "http" {
		t.OKStatus = []int{200}
	}
	if belongs("ok_status", r.OKStatus, "http") {
		if list, ok := c.intList(r.OKStatus, key("ok_status")); ok {
			if len(list) == 0 {
				c.add(key("ok_status"), "ok_status is empty: list at least one status code, or leave it out for [200]")
			}
			var codes []int
			for _, n := range list {
				switch {
				case n < 100 || n > 599:
					c.add(key("ok_status"), "ok_status: %d is not an HTTP status code (100..599)", n)
				case slices.Contains(codes, int(n)):
					c.add(key("ok_status"), "ok_status: %d is listed twice", n)
				default:
					codes = append(codes, int(n))
				}
			}
			t.OKStatus = codes
		}
	}

	file := func(name string, f field) string {
		if !belongs(name, f, "http") {
			return ""
		}
		s, ok := c.str(f, key(name))
		if !ok || s == "" {
			return ""
		}
		if msg := absPathProblem(s); msg != "" {
			c.add(key(name), "%s %s", name, msg)
			return ""
		}
		if scheme == "http" {
			c.add(key(name), "key %q is for https URLs, and url is http", name)
			return ""
		}
		return s
	}
	t.CAFile = file("ca_file", r.CAFile)
	t.CertFile = file("cert_file", r.CertFile)
	t.KeyFile = file("key_file", r.KeyFile)

	if belongs("insecure_skip_verify", r.InsecureSkipVerify, "http") {
		if b, ok := c.boolean(r.InsecureSkipVerify, key("insecure_skip_verify")); ok && b {
			switch {
			case scheme == "http":
				c.add(key("insecure_skip_verify"), "key %q is for https URLs, and url is http", "insecure_skip_verify")
			case t.CAFile != "":
				c.add(key("insecure_skip_verify"), "insecure_skip_verify = true contradicts ca_file: the CA matters only when the certificate is verified")
			default:
				t.InsecureSkipVerify = true
			}
		}
	}

	// Both or neither, whatever else is wrong with them.
	if cert, pkey := nonEmpty(r.CertFile), nonEmpty(r.KeyFile); cert != pkey && scheme != "http" && (t.Type == "" || t.Type == "http") {
		if cert {
			c.add(key("cert_file"), "cert_file is set without key_file: set both or neither")
		} else {
			c.add(key("key_file"), "key_file is set without cert_file: set both or neither")
		}
	}
}

// nonEmpty reports whether f holds a string other than "".
func nonEmpty(f field) bool {
	s, ok := f.val.(string)
	return f.set && ok && s != ""
}

// notify checks [instance.notify] at path at.
func (c *checker) notify(at string, r *rawNotify) Notify {
	n := Notify{Timeout: defaultNotifyTimeout}
	key := func(name string) string { return keyPath(at, name) }
	n.Master, _ = c.argv(r.Master, key("master"), false)
	n.Backup, _ = c.argv(r.Backup, key("backup"), false)
	n.Fault, _ = c.argv(r.Fault, key("fault"), false)
	n.Stop, _ = c.argv(r.Stop, key("stop"), false)
	if d, ok := c.anyDuration(r.Timeout, key("timeout")); ok {
		if d <= 0 || d > maxNotifyTimeout {
			c.add(key("timeout"), "%s %q must be more than 0s and at most %s", c.rel(key("timeout")), r.Timeout.val, FormatDuration(maxNotifyTimeout))
		} else {
			n.Timeout = d
		}
	}
	return n
}

// argv reads a command: an array of strings, the program (an absolute path)
// and its arguments, run without a shell. An empty array is an error when
// required, and no command otherwise.
func (c *checker) argv(f field, p string, required bool) ([]string, bool) {
	if s, ok := f.val.(string); f.set && ok {
		example := `["/usr/local/bin/check", "--quick"]`
		if words := strings.Fields(s); len(words) > 0 {
			quoted := make([]string, len(words))
			for i, w := range words {
				quoted[i] = strconv.Quote(w)
			}
			example = "[" + strings.Join(quoted, ", ") + "]"
			if !strings.HasPrefix(words[0], "/") {
				example += ", with the program as an absolute path"
			}
		}
		c.add(p, "%s must be an array of strings, the program and its arguments (it runs without a shell), such as %s", c.rel(p), example)
		return nil, false
	}
	list, ok := c.stringList(f, p)
	if !ok {
		return nil, false
	}
	switch {
	case len(list) == 0 && required:
		c.add(p, "%s is empty: give the program and its arguments, such as [\"/usr/local/bin/check\", \"--quick\"]", c.rel(p))
		return nil, false
	case len(list) == 0:
		return nil, true
	case len(list) < len(f.val.([]any)):
		return nil, false // an element that is not a string, reported
	}
	if !path.IsAbs(list[0]) {
		c.add(p, "%s: the program %q must be an absolute path (there is no shell and no PATH search)", c.rel(p), list[0])
		return nil, false
	}
	if i := slices.IndexFunc(list, func(s string) bool { return strings.ContainsRune(s, 0) }); i >= 0 {
		c.add(p, "%s: element %d contains a NUL byte", c.rel(p), i+1)
		return nil, false
	}
	return list, true
}

// intList reads an array of integers.
func (c *checker) intList(f field, p string) ([]int64, bool) {
	return listOf[int64](c, f, p, "integers", "an integer")
}

// absPathProblem says what is wrong with a path that must be absolute, or "".
func absPathProblem(s string) string {
	switch {
	case !path.IsAbs(s):
		return fmt.Sprintf("%q must be an absolute path", s)
	case strings.ContainsRune(s, 0):
		return fmt.Sprintf("%q contains a NUL byte", s)
	}
	return ""
}

// parseURL parses an http tracker's URL, or says what is wrong with it.
func parseURL(s string) (*url.URL, string) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Sprintf("url %q is not a valid URL: %v", s, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Sprintf("url %q: the scheme must be http or https", u.Redacted())
	case u.User != nil:
		// Every state change of the tracker is logged with its URL.
		return nil, fmt.Sprintf("url %q must not carry credentials: they would be logged", u.Redacted())
	case u.Hostname() == "":
		return nil, fmt.Sprintf("url %q has no host", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return nil, fmt.Sprintf("url %q: port %s out of range 1..65535", s, p)
		}
	}
	return u, ""
}

// groupProblem says what is wrong with global.socket_group, or "". A group
// is a name or a numeric gid; it is not looked up, so that a config can be
// checked on another host.
func groupProblem(s string) string {
	if s == "" {
		return ""
	}
	if strings.Trim(s, "0123456789") == "" {
		if n, err := strconv.ParseUint(s, 10, 32); err != nil || n == 1<<32-1 {
			return fmt.Sprintf("socket_group %q is not a valid gid (0..%d)", s, uint32(1<<32-2))
		}
		return ""
	}
	name := strings.TrimSuffix(s, "$") // Samba machine accounts end in $
	switch {
	case len(s) > maxGroupLen:
		return fmt.Sprintf("socket_group %q is longer than %d characters", s, maxGroupLen)
	case name == "" || name == "." || name == ".." || name[0] == '-' || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}):
		return fmt.Sprintf("socket_group %q is neither a group name (A-Z, a-z, 0-9, '_', '.', '-', not first) nor a numeric gid", s)
	}
	return ""
}

// listenProblem says what is wrong with global.metrics_listen, or "": it
// must be IP:port, [IPv6]:port or :port (every address).
func listenProblem(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
			return fmt.Sprintf("metrics_listen %q is not host:port: put an IPv6 address in brackets, as in \"[::1]:9650\"", s)
		}
		return fmt.Sprintf("metrics_listen %q is not host:port, such as \"127.0.0.1:9650\" or \":9650\" (every address)", s)
	}
	if host != "" {
		a, err := netip.ParseAddr(host)
		switch {
		case err != nil:
			return fmt.Sprintf("metrics_listen %q: the host %q is not an IP address; give one of this host's addresses, or none (\":%s\") for every address", s, host, port)
		case a.IsMulticast():
			return fmt.Sprintf("metrics_listen %q: %s is a multicast address", s, host)
		}
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Sprintf("metrics_listen %q: port %q is not a port number 1..65535", s, port)
	}
	return ""
}
