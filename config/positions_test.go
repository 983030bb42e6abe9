package config

import (
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
)

func TestPositions(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want map[string]int // path → line; only these are checked
	}{
		{
			name: "arrays of tables and their sub-tables",
			src: `[global]
socket = "/x"

[[instance]]
name = "a"
[instance.garp]
repeat = 1

[[instance]]
name = "b"
[[instance.track]]
type = "http"
[[instance.track]]
type = "exec"
[instance.garp]
repeat = 2
`,
			want: map[string]int{
				"global":                    1,
				"global.socket":             2,
				"instance":                  4,
				"instance[0]":               4,
				"instance[0].name":          5,
				"instance[0].garp":          6,
				"instance[0].garp.repeat":   7,
				"instance[1]":               9,
				"instance[1].name":          10,
				"instance[1].track":         11,
				"instance[1].track[0]":      11,
				"instance[1].track[0].type": 12,
				"instance[1].track[1].type": 14,
				"instance[1].garp.repeat":   16,
			},
		},
		{
			name: "inline tables, arrays and dotted keys",
			src: `a = {x = 1, y.z = 2}
b = [
  {x = 1},
  {
    x = 2,
  },
]
c.d = [1,
  2]
"quoted.key" = 1
'lit' = 2
e."f g" = 3
`,
			want: map[string]int{
				"a":            1,
				"a.x":          1,
				"a.y.z":        1,
				"b":            2,
				"b[0]":         3,
				"b[0].x":       3,
				"b[1]":         4,
				"b[1].x":       5,
				"c.d":          8,
				"c.d[1]":       9,
				`"quoted.key"`: 10,
				"lit":          11,
				`e."f g"`:      12,
			},
		},
		{
			name: "look-alikes inside strings and comments",
			src: `s = """
[[instance]]
x = 1 \"""
"""
t = '''
a = 'b'
'''''
u = "# not a comment [x]"
# [[instance]]
v = "\"" # "
w = 1979-05-27 07:32:00 # a local date-time holds a space
x = 1
`,
			want: map[string]int{"s": 1, "t": 5, "u": 8, "v": 10, "w": 11, "x": 12},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			md, err := toml.Decode(tt.src, &m)
			if err != nil {
				t.Fatalf("the fixture is not valid TOML: %v", err)
			}
			pos, err := scanPositions(tt.src)
			if err != nil {
				t.Fatalf("scanPositions: %v", err)
			}
			if !pos.agrees(md.Keys()) {
				t.Errorf("keys differ from the decoder's:\n%s", cmp.Diff(md.Keys(), entryKeys(pos)))
			}
			got := map[string]int{}
			for p := range tt.want {
				got[p] = pos.line(p)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func entryKeys(p *positions) []toml.Key {
	var ks []toml.Key
	for _, e := range p.entries {
		ks = append(ks, e.key)
	}
	return ks
}

func TestPositionsFallBackToTable(t *testing.T) {
	pos, err := scanPositions("a = 1\n\n[[instance]]\nname = \"x\"\n")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]int{
		"instance[0].vrid":        3, // missing: its table's line
		"instance[0].garp.repeat": 3,
		"global.socket":           0, // nothing at all
	} {
		if got := pos.line(p); got != want {
			t.Errorf("line(%q) = %d, want %d", p, got, want)
		}
	}
}

func TestParentPath(t *testing.T) {
	for p, want := range map[string]string{
		"a":                "",
		"a.b":              "a",
		"instance[2]":      "instance",
		"instance[2].garp": "instance[2]",
		`a."b.c[1]"`:       "a",
		`a."x\"y.z".w`:     `a."x\"y.z"`,
		`"a.b"[0]`:         `"a.b"`,
		"":                 "",
	} {
		if got := parentPath(p); got != want {
			t.Errorf("parentPath(%q) = %q, want %q", p, got, want)
		}
	}
}

// When the scanner and the decoder disagree, problems keep their keys but
// lose their lines rather than point at wrong ones.
func TestPositionsFromKeys(t *testing.T) {
	var m map[string]any
	md, err := toml.Decode("[[instance]]\npriorty = 1\n", &m)
	if err != nil {
		t.Fatal(err)
	}
	c := &checker{file: "vipd.toml", pos: positionsFromKeys(md.Keys())}
	c.unknownKeys(md.Keys()[1:])
	want := []Problem{{File: "vipd.toml", Message: `unknown key "instance.priorty" (did you mean "instance.priority"?)`}}
	if diff := cmp.Diff(want, c.problems); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}
