package config

import (
	"log/slog"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipd/vipd/bgp"
)

// The reference config documents every key; these tests keep it honest.
const referencePath = "../packaging/vipd.toml"

func readReference(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReferenceConfig: the file parses, and every value it sets is the
// default it claims, so a changed default cannot go unnoticed.
func TestReferenceConfig(t *testing.T) {
	src := readReference(t)
	got := mustParse(t, src)
	in := defaults("k8s-api", "eth0", 51, "192.0.2.10/32")
	// The tracker shows the values recommended for an API server: defaults
	// but for ok_status ([200]) and insecure_skip_verify (false).
	in.Tracks = []Track{{
		Name: "apiserver", Type: "http", Weight: -50, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second,
		URL: "https://127.0.0.1:6443/readyz", OKStatus: []int{200, 401}, InsecureSkipVerify: true,
		Line: lineOf(t, src, "[[instance.track]]"),
	}}
	want := &Config{
		Path:      "vipd.toml",
		Global:    Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo, StateDir: DefaultStateDir},
		Instances: []Instance{in},
	}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("reference config mismatch (-want +got):\n%s", diff)
	}
}

// lineOf returns the line of the first line of src that is exactly text.
func lineOf(t *testing.T, src, text string) int {
	t.Helper()
	i := slices.Index(strings.Split(src, "\n"), text)
	if i < 0 {
		t.Fatalf("%s has no line %q", referencePath, text)
	}
	return i + 1
}

// uncommentExamples turns each commented-out example, "# key = value" or a
// commented table header, back into TOML.
func uncommentExamples(src string) string {
	return regexp.MustCompile(`(?m)^# ((?:[a-z_]+ = .*)|(?:\[\[?[a-z_.]+\]\]?))$`).ReplaceAllString(src, "$1")
}

// TestReferenceExamples: uncommenting every example gives a valid config
// that uses them.
func TestReferenceExamples(t *testing.T) {
	src := uncommentExamples(readReference(t))
	got := mustParse(t, src)
	if got.Global.NodeName != "cp-1" {
		t.Errorf("NodeName = %q, want the example's cp-1", got.Global.NodeName)
	}
	if len(got.Instances) != 5 {
		t.Fatalf("got %d instances, want the examples' second to fifth too", len(got.Instances))
	}
	in := got.Instances[0]
	if len(in.UnicastPeers) == 0 || !in.UnicastSource.IsValid() {
		t.Errorf("unicast examples not used: peers %v, source %v", in.UnicastPeers, in.UnicastSource)
	}
	if in.UnicastSource != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("UnicastSource = %v", in.UnicastSource)
	}
	if in.UnicastMinTTL != 255 || in.UnicastMaxTTL != 255 {
		t.Errorf("TTL range examples not the defaults: %d..%d", in.UnicastMinTTL, in.UnicastMaxTTL)
	}
	if got.Global.SocketGroup != "vipd" || got.Global.MetricsListen != "127.0.0.1:9650" {
		t.Errorf("global examples not used: socket_group %q, metrics_listen %q", got.Global.SocketGroup, got.Global.MetricsListen)
	}

	// The trackers: the API server's, then the commented drain switch, exec
	// and interface examples, each with its type's default weight.
	var types []string
	for _, tr := range in.Tracks {
		types = append(types, tr.Type)
	}
	if want := []string{"http", "file", "exec", "interface"}; !slices.Equal(types, want) {
		t.Fatalf("tracker types %v, want %v", types, want)
	}
	if drain := in.Tracks[1]; drain.Name != "drain" || drain.Path != "/etc/vipd/drain" || drain.Weight != 0 {
		t.Errorf("drain tracker = %+v, want path /etc/vipd/drain and weight 0 (Fault)", drain)
	}
	if exec := in.Tracks[2]; exec.Weight != -50 || len(exec.Command) == 0 || exec.Timeout >= exec.Interval {
		t.Errorf("exec tracker = %+v", exec)
	}
	if in.Tracks[3].Interface != "eth1" {
		t.Errorf("interface tracker = %+v", in.Tracks[3])
	}
	if len(in.Notify.Master) == 0 || len(in.Notify.Backup) == 0 || len(in.Notify.Fault) == 0 || in.Notify.Timeout != 10*time.Second {
		t.Errorf("notify example not used: %+v", in.Notify)
	}

	// The second instance is the plain example, with no trackers or hooks.
	if second := got.Instances[1]; len(second.Tracks) != 0 || len(second.Notify.Master) != 0 {
		t.Errorf("second instance picked up the first's examples: %+v", second)
	}

	// The BGP speaker, its two routers, and the anycast instance.
	if b := got.BGP; b == nil || b.ASN != 65001 || b.ListenPort != 0 || b.GracefulRestartTime != 0 || len(b.Peers) != 2 ||
		b.Peers[0].Password == "" || b.Peers[1].PasswordFile == "" || b.Peers[0].HoldTime != bgp.DefaultHoldTime || b.Peers[0].BFD {
		t.Errorf("bgp example not used as documented: %+v", b)
	}
	if in.Announce != AnnounceARP {
		t.Errorf("first instance announces by %v, want the default arp", in.Announce)
	}
	if any := got.Instances[3]; any.Announce != AnnounceBGPAnycast || any.VRID != 0 || any.Interface != "" ||
		len(any.BGP.Communities) != 1 || any.BGP.MED == nil || any.BGP.GracefulShutdownTime != 5*time.Second || any.BGP.AnycastMinPriority != 60 {
		t.Errorf("fourth instance is not the anycast example: %+v", any)
	}

	// The fifth joins keepalived at VRRPv2.
	if v2 := got.Instances[4]; v2.Version != 2 || !v2.AcceptOtherVersion || v2.AuthPass != "k8s-api1" || v2.AddressOwner != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("fifth instance is not the VRRPv2 example: %+v", v2)
	}

	// The third is the dual-stack follower of the first.
	if third := got.Instances[2]; third.Follow != in.Name || !third.IPv6() || third.VRID != in.VRID || len(third.Tracks) != 0 {
		t.Errorf("third instance is not an IPv6 follower of %q with its VRID: %+v", in.Name, third)
	}
}

// TestReferenceDocumentsEveryKey: each key of the schema is set or shown in
// an example, so a new key cannot be added without documenting it.
func TestReferenceDocumentsEveryKey(t *testing.T) {
	src := uncommentExamples(readReference(t))
	pos, err := scanPositions(src)
	if err != nil {
		t.Fatal(err)
	}
	var present []string
	for _, e := range pos.entries {
		present = append(present, e.key.String())
	}
	var walk func(t reflect.Type, prefix string) []string
	walk = func(typ reflect.Type, prefix string) []string {
		var keys []string
		for f := range schemaFields(typ) {
			if sub, ok := f.table(); ok {
				keys = append(keys, walk(sub, prefix+f.name+".")...)
			} else {
				keys = append(keys, prefix+f.name)
			}
		}
		return keys
	}
	for _, k := range walk(reflect.TypeFor[rawConfig](), "") {
		if !slices.Contains(present, k) {
			t.Errorf("%s does not document %s", referencePath, k)
		}
	}
}
