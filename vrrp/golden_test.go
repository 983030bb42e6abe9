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
	// peers use the pseudo-header. VRRPv2 has one form, without it.
	form ChecksumForm
	// version is the file's "version" line; none means 3.
	version uint8
}

func readGolden(t *testing.T, path string) goldenAdvert {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := goldenAdvert{file: filepath.Base(path), version: Version}
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
		case "version":
			var n int
			n, err = strconv.Atoi(val)
			g.version = uint8(n)
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

var goldenName = regexp.MustCompile(`^(keepalived|frr|crafted)-v([23])-(ipv6-|rfc5798-|rfc9568-)?vrid(\d+)-prio(\d+)(.*-pass)?`)

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
			v2 := m[2] == "2"
			if v2 {
				g.form = ChecksumNoPseudoHeader // RFC 3768 section 5.3.8
				peers[m[1]+" v2"]++
			} else {
				peers[m[1]+" "+strings.TrimSuffix(m[3], "-")]++
			}
			if strconv.Itoa(int(g.version)) != m[2] {
				t.Errorf("the file says version %d, its name %s", g.version, m[2])
			}
			if (m[3] == "ipv6-") == g.src.Is4() {
				t.Errorf("source %v does not match the name's family", g.src)
			}
			if want := m[3] == "rfc9568-" || v2; want != (g.form == ChecksumNoPseudoHeader) {
				t.Errorf("checksum %v does not match the name", g.form)
			}
			if err := CheckTTL(g.ttl); err != nil {
				t.Errorf("captured TTL %d: %v", g.ttl, err)
			}
			var a Advertisement
			if err := a.Decode(g.payload, g.src, g.dst); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if strconv.Itoa(int(a.VRID)) != m[4] || strconv.Itoa(int(a.Priority)) != m[5] {
				t.Errorf("decoded VRID %d priority %d, the capture says %s/%s", a.VRID, a.Priority, m[4], m[5])
			}
			if a.Version != g.version {
				t.Errorf("decoded version %d, the file says %d", a.Version, g.version)
			}
			if wantPass := m[6] != ""; wantPass != (a.Auth.Type == AuthPass) || !wantPass && a.Auth != (Auth{}) {
				t.Errorf("decoded authentication %+v; the name says a password: %v", a.Auth, wantPass)
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
	for _, want := range []string{"keepalived ", "frr ", "keepalived ipv6", "frr ipv6", "crafted rfc5798", "crafted rfc9568", "keepalived v2"} {
		if peers[want] == 0 {
			t.Errorf("no golden adverts of kind %q; have %v", want, peers)
		}
	}
}
