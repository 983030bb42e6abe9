package config

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParse checks that Parse never panics, always returns a config or
// problems (never both), and that for every document the decoder accepts,
// the position index sees exactly the decoder's keys, so its lines can be
// trusted.
func FuzzParse(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte(base + "[instance.garp]\nrepeat = 0\n"))
	f.Add([]byte("instance = [{name = \"a\", garp = {repeat = 1}, vips = [\"192.0.2.1\"]}]\n"))
	f.Add([]byte("a = \"\"\"\n[[x]]\n\"\"\"\nb = '''c'''''\n\"k.\\u0041\" = 1\n"))
	f.Add([]byte("[a.b]\n[[a.c]]\n[[a.c.d]]\nx.y = 1\n[[a.c]]\n"))
	f.Add([]byte("[[instance]\n"))
	f.Add([]byte(secondTrack(drain + "timeout = \"1s\"\n[instance.notify]\nmaster = [\"x\"]\n")))
	f.Add([]byte(base + "track = [{name = \"a\", type = \"http\", url = \"https://u:p@[::1/\", ok_status = [1]}, 2]\n"))
	f.Add([]byte("[global]\nmetrics_listen = \"[fe80::1%eth0]:9650\"\nsocket_group = \"a$\"\n"))
	f.Add([]byte("\xef\xbb\xbfa = 1979-05-27 07:32:00\r\n"))
	if data, err := os.ReadFile(referencePath); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parse("f.toml", data, testHostname)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("parse returned config %v and error %v", cfg, err)
		}
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) || len(perr.Problems) == 0 {
				t.Fatalf("error %v is not an *Error with problems", err)
			}
			lines := strings.Count(string(data), "\n") + 1
			for _, p := range perr.Problems {
				if p.File != "f.toml" || p.Line < 0 || p.Line > lines || p.Message == "" {
					t.Fatalf("bad problem %+v", p)
				}
			}
		}

		var doc map[string]any
		md, err := toml.Decode(string(data), &doc)
		if err != nil {
			return
		}
		pos, err := scanPositions(string(data))
		if err != nil {
			t.Fatalf("the decoder accepts this document but the position scanner does not: %v", err)
		}
		if !pos.agrees(md.Keys()) {
			t.Fatalf("position scanner keys differ:\n got %v\nwant %v", entryKeys(pos), md.Keys())
		}
	})
}
