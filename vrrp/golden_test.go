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

// goldenAdvert is one advert captured from keepalived or FRR's vrrpd, or
// crafted with an independent codec; see testdata/golden/README.md for how
// they were made.
type goldenAdvert struct {
	file     string
	src, dst netip.Addr
	ttl      int
	payload  []byte
	// form is the checksum form the file says it uses; captures from stock
	// peers use the pseudo-header.
	form ChecksumForm
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
		case "checksum":
			switch val {
			case ChecksumPseudoHeader.String():
				g.form = ChecksumPseudoHeader
			case ChecksumNoPseudoHeader.String():
				g.form = ChecksumNoPseudoHeader
			default:
				t.Fatalf("%s: checksum %q is neither rfc5798 nor rfc9568", path, val)
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return g
}

var goldenName = regexp.MustCompile(`^(keepalived|frr|crafted)-v3-(ipv6-|rfc5798-|rfc9568-)?vrid(\d+)-prio(\d+)`)

func TestGoldenAdverts(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	// peers counts the files per sender and family (or checksum form).
	peers := map[string]int{}
	for _, f := range files {
		g := readGolden(t, f)
		t.Run(g.file, func(t *testing.T) {
			m := goldenName.FindStringSubmatch(g.file)
			if m == nil {
				t.Fatalf("file name does not say peer, VRID and priority")
			}
			peers[m[1]+" "+strings.TrimSuffix(m[2], "-")]++
			if (m[2] == "ipv6-") == g.src.Is4() {
				t.Errorf("source %v does not match the name's family", g.src)
			}
			if want := m[2] == "rfc9568-"; want != (g.form == ChecksumNoPseudoHeader) {
				t.Errorf("checksum %v does not match the name", g.form)
			}
			if err := CheckTTL(g.ttl); err != nil {
				t.Errorf("captured TTL %d: %v", g.ttl, err)
			}
			var a Advertisement
			if err := a.Decode(g.payload, g.src, g.dst); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if strconv.Itoa(int(a.VRID)) != m[3] || strconv.Itoa(int(a.Priority)) != m[4] {
				t.Errorf("decoded VRID %d priority %d, the capture says %s/%s", a.VRID, a.Priority, m[3], m[4])
			}
			if a.Checksum != g.form {
				t.Errorf("decoded checksum form %v, the file says %v", a.Checksum, g.form)
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
	for _, want := range []string{"keepalived ", "frr ", "keepalived ipv6", "frr ipv6", "crafted rfc5798", "crafted rfc9568"} {
		if peers[want] == 0 {
			t.Errorf("no golden adverts of kind %q; have %v", want, peers)
		}
	}
}
