package config

import (
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// The raw types mirror the file. Their toml tags are the schema: unknown-key
// detection, "did you mean" hints and the table-shape check all read them by
// reflection, so a new key or sub-table (as [[instance.track]] is, a
// []rawTrack field) needs no change there.

type rawConfig struct {
	Global   rawGlobal     `toml:"global"`
	BGP      rawBGP        `toml:"bgp"`
	Instance []rawInstance `toml:"instance"`
}

type rawGlobal struct {
	NodeName      field `toml:"node_name"`
	Socket        field `toml:"socket"`
	LogFormat     field `toml:"log_format"`
	LogLevel      field `toml:"log_level"`
	StateDir      field `toml:"state_dir"`
	SocketGroup   field `toml:"socket_group"`
	MetricsListen field `toml:"metrics_listen"`
	RealtimePrio  field `toml:"realtime_priority"`
	RealtimePol   field `toml:"realtime_policy"`
	LockMemory    field `toml:"lock_memory"`
}

type rawInstance struct {
	Name           field   `toml:"name"`
	Interface      field   `toml:"interface"`
	VRID           field   `toml:"vrid"`
	Priority       field   `toml:"priority"`
	AdvertInterval field   `toml:"advert_interval"`
	VIPs           field   `toml:"vips"`
	Preempt        field   `toml:"preempt"`
	PreemptDelay   field   `toml:"preempt_delay"`
	UnicastPeers   field   `toml:"unicast_peers"`
	UnicastSource  field   `toml:"unicast_source"`
	UnicastMinTTL  field   `toml:"unicast_min_ttl"`
	UnicastMaxTTL  field   `toml:"unicast_max_ttl"`
	Checksum       field   `toml:"checksum"`
	Follow         field   `toml:"follow"`
	GARP           rawGARP `toml:"garp"`

	// VRRPv2 and moving between versions (version.go).
	Version        field `toml:"version"`
	AcceptVersions field `toml:"accept_versions"`
	AuthPass       field `toml:"auth_pass"`
	AddressOwner   field `toml:"address_owner"`

	// BGP announcements (bgp.go).
	Announce             field `toml:"announce"`
	Communities          field `toml:"communities"`
	MED                  field `toml:"med"`
	GracefulShutdownTime field `toml:"graceful_shutdown_time"`
	AnycastMinPriority   field `toml:"anycast_min_priority"`

	SplitBrainRecovery  field      `toml:"split_brain_recovery"`
	MasterDownAdverts   field      `toml:"master_down_adverts"`
	TrustUnknownMasters field      `toml:"trust_unknown_masters"`
	Track               []rawTrack `toml:"track"`
	Notify              rawNotify  `toml:"notify"`
}

type rawGARP struct {
	Repeat   field `toml:"repeat"`
	Interval field `toml:"interval"`
	Refresh  field `toml:"refresh"`
	Probe    field `toml:"probe"`
}

// anySet reports whether the file sets any key of [instance.garp].
func (g rawGARP) anySet() bool {
	return g.Repeat.set || g.Interval.set || g.Refresh.set || g.Probe.set
}

type rawTrack struct {
	Name     field `toml:"name"`
	Type     field `toml:"type"`
	Weight   field `toml:"weight"`
	Fall     field `toml:"fall"`
	Rise     field `toml:"rise"`
	Interval field `toml:"interval"`
	Timeout  field `toml:"timeout"`

	URL                field `toml:"url"`
	OKStatus           field `toml:"ok_status"`
	CAFile             field `toml:"ca_file"`
	CertFile           field `toml:"cert_file"`
	KeyFile            field `toml:"key_file"`
	InsecureSkipVerify field `toml:"insecure_skip_verify"`

	Command field `toml:"command"`

	Path field `toml:"path"`

	Interface field `toml:"interface"`
}

type rawNotify struct {
	Master  field `toml:"master"`
	Backup  field `toml:"backup"`
	Fault   field `toml:"fault"`
	Stop    field `toml:"stop"`
	Timeout field `toml:"timeout"`
}

// field keeps one key's value as the decoder produced it (string, int64,
// float64, bool, time.Time, []any or map[string]any). Decoding into it never
// fails, so a wrong type becomes one more problem with its line instead of
// ending the decode and hiding every other problem.
type field struct {
	val any
	set bool
}

// UnmarshalTOML implements toml.Unmarshaler.
func (f *field) UnmarshalTOML(v any) error {
	f.val, f.set = v, true
	return nil
}

// typeName names a decoded value's TOML type for messages.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case time.Time:
		return "a date-time"
	case []any:
		return "an array"
	case []map[string]any:
		return "an array of tables"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// schemaField is one key a raw table accepts.
type schemaField struct {
	name string
	typ  reflect.Type
}

// table returns the raw type of the table this key holds: t itself for a
// table, its element type for an array of tables; ok is false for a leaf.
func (f schemaField) table() (reflect.Type, bool) {
	t := f.typ
	if t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t, t.Kind() == reflect.Struct && t != reflect.TypeFor[field]()
}

// schemaFields yields the keys a raw table type accepts, in declaration
// order. An iterator, not a slice: lookup runs for every key of the
// document, and slices built each time were most of what a configuration
// of 255 groups allocated to load (10 MB).
func schemaFields(t reflect.Type) iter.Seq[schemaField] {
	return func(yield func(schemaField) bool) {
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); name != "" {
				if !yield(schemaField{name: name, typ: t.Field(i).Type}) {
					return
				}
			}
		}
	}
}

// lookup finds the key the decoder would fill for name. The decoder falls
// back to a case-insensitive match, which exact reports as false.
func lookup(t reflect.Type, name string) (f schemaField, exact, ok bool) {
	for f := range schemaFields(t) {
		if f.name == name {
			return f, true, true
		}
	}
	for f := range schemaFields(t) {
		if strings.EqualFold(f.name, name) {
			return f, false, true
		}
	}
	return schemaField{}, false, false
}

// checkShape reports every key of the schema that holds a table (or an array
// of tables) but has some other value in the document. The decoder would stop
// at the first of these, so they are found first, on the generic decode.
func (c *checker) checkShape(m map[string]any, t reflect.Type, p string, k toml.Key) {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names) // map order is random; messages should not be
	for _, name := range names {
		f, exact, ok := lookup(t, name)
		if !ok {
			continue
		}
		tt, ok := f.table()
		if !ok {
			continue
		}
		kp, kk := keyPath(p, name), append(slices.Clip(k), name)
		subs, wrong := tablesIn(f, m[name], kk)
		switch {
		case wrong != "" && !exact:
			// The decoder matched it case-insensitively and would still try.
			c.add(kp, "unknown key %q (did you mean %q?)", c.rel(kp), c.rel(keyPath(p, f.name)))
		case wrong != "":
			c.add(kp, "%s %s", c.rel(kp), wrong)
		case f.typ.Kind() == reflect.Slice:
			for i, sub := range subs {
				c.checkShape(sub, tt, elemPath(kp, i), kk)
			}
		default:
			c.checkShape(subs[0], tt, kp, kk)
		}
	}
}

// tablesIn returns the tables a value of the table or array-of-tables key f
// holds, or says what is wrong with it.
func tablesIn(f schemaField, v any, k toml.Key) ([]map[string]any, string) {
	if f.typ.Kind() != reflect.Slice {
		if sub, ok := v.(map[string]any); ok {
			return []map[string]any{sub}, ""
		}
		return nil, fmt.Sprintf("must be a table, not %s", typeName(v))
	}
	switch v := v.(type) {
	case []map[string]any:
		return v, ""
	case []any:
		subs := make([]map[string]any, len(v))
		for i, e := range v {
			sub, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Sprintf("must be an array of tables ([[%s]]), but element %d is %s", k, i+1, typeName(e))
			}
			subs[i] = sub
		}
		return subs, ""
	}
	return nil, fmt.Sprintf("must be an array of tables ([[%s]]), not %s", k, typeName(v))
}
