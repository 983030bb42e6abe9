package keepalived

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vipd/vipd/config"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/corpus")

// TestKeepalivedCorpus converts each testdata/corpus/*.conf, compares the
// vipd.toml and the report with the golden *.toml and *.items, and checks
// that vipd accepts the output.
func TestKeepalivedCorpus(t *testing.T) {
	t.Chdir("testdata/corpus") // file names in the output are as opened
	files, err := filepath.Glob("*.conf")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(f, ".conf"), func(t *testing.T) {
			kcfg, err := ParseFile(f, ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res := Convert(kcfg, Options{})
			var items bytes.Buffer
			for _, it := range res.Items {
				items.WriteString(it.String() + "\n")
			}
			base := strings.TrimSuffix(f, ".conf")
			golden(t, base+".toml", res.TOML)
			golden(t, base+".items", items.Bytes())
			if res.Instances == 0 {
				t.Fatal("no instance converted")
			}
			if _, err := config.Parse(base+".toml", res.TOML); err != nil {
				t.Errorf("vipd refuses the output:\n%v", err)
			}
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run go test -run Corpus -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -run Corpus -update rewrites it):\n--- got\n%s", name, got)
	}
}
