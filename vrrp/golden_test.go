package vrrp

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goldenAdvert is one advert captured from keepalived or FRR's vrrpd; see
// testdata/golden/README.md for how they were made.
type goldenAdvert struct {
	file     string
	src, dst netip.Addr
	ttl      int
	payload  []byte
}

func readGolden(t *testing.T, path string) goldenAdvert {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := goldenAdvert{file: filepath.Base(path)}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "src":
			g.src = netip.MustParseAddr(val)
		case "dst":
			g.dst = netip.MustParseAddr(val)
		case "ttl":
			g.ttl, err = strconv.Atoi(val)
		case "payload":
			g.payload, err = hex.DecodeString(val)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return g
}

var goldenName = regexp.MustCompile(`^(keepalived|frr)-v3-vrid(\d+)-prio(\d+)`)

func TestGoldenAdverts(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	peers := map[string]int{}
	for _, f := range files {
		g := readGolden(t, f)
		t.Run(g.file, func(t *testing.T) {
			m := goldenName.FindStringSubmatch(g.file)
			if m == nil {
				t.Fatalf("file name does not say peer, VRID and priority")
			}
			peers[m[1]]++
			if err := CheckTTL(g.ttl); err != nil {
				t.Errorf("captured TTL %d: %v", g.ttl, err)
			}
			var a Advertisement
			if err := a.Decode(g.payload, g.src, g.dst); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if strconv.Itoa(int(a.VRID)) != m[2] || strconv.Itoa(int(a.Priority)) != m[3] {
				t.Errorf("decoded VRID %d priority %d, the capture says %s/%s", a.VRID, a.Priority, m[2], m[3])
			}
			b, err := a.Append(nil, g.src, g.dst)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, g.payload) {
				t.Errorf("re-encoded\n %x\nwant\n %x", b, g.payload)
			}
		})
	}
	if peers["keepalived"] == 0 || peers["frr"] == 0 {
		t.Errorf("golden adverts from keepalived: %d, from FRR: %d; want both", peers["keepalived"], peers["frr"])
	}
}
