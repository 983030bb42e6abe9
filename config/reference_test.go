package config

import (
	"log/slog"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	got := mustParse(t, readReference(t))
	want := &Config{
		Path:      "vipd.toml",
		Global:    Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo},
		Instances: []Instance{defaults("k8s-api", "eth0", 51, "192.0.2.10/32")},
	}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("reference config mismatch (-want +got):\n%s", diff)
	}
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
	if len(got.Instances) != 2 {
		t.Fatalf("got %d instances, want the example's second one too", len(got.Instances))
	}
	in := got.Instances[0]
	if len(in.UnicastPeers) == 0 || !in.UnicastSource.IsValid() {
		t.Errorf("unicast examples not used: peers %v, source %v", in.UnicastPeers, in.UnicastSource)
	}
	if in.UnicastSource != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("UnicastSource = %v", in.UnicastSource)
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
		for _, f := range schemaFields(typ) {
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
