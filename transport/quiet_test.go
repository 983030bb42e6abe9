package transport

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"golang.org/x/net/bpf"
)

// datagram is the IPv4 datagram a raw socket's filter sees for payload
// from src (a plain header, TTL 255, protocol 112).
func datagram(src netip.Addr, payload []byte) []byte {
	b := make([]byte, headerLen+len(payload))
	b[0], b[8], b[9] = ipv4PlainHeader, 255, protoVRRP
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	copy(b[12:], src.AsSlice())
	copy(b[16:], []byte{224, 0, 0, 18})
	copy(b[headerLen:], payload)
	return b
}

// testAdvert is a VRRPv3 advert's bytes for vrid at prio with vips
// addresses (the checksum is not checked by the filter: any value).
func testAdvert(vrid, prio uint8, vips int, salt byte) []byte {
	b := []byte{0x31, vrid, prio, byte(vips), 0, 100, salt, vrid}
	for i := range vips {
		b = append(b, 192, 0, 2, byte(10+i))
	}
	return b
}

// quietPrograms returns the two filters a change would attach for
// patterns: main keeps what matches none, quiet keeps what matches one.
// Patterns that would not fit the kernel's limit are left out, and so are
// patterns that cannot be one.
func (f quietFamily) quietPrograms(patterns []QuietPattern) (main, quiet []bpf.Instruction, used int) {
	ps := f.quietFit(patterns)
	return f.mainProgram(ps), f.quietOnly(ps), len(ps)
}

// testAdvert6 is testAdvert over IPv6: vips addresses of 16 bytes.
func testAdvert6(vrid, prio uint8, vips int) []byte {
	b := []byte{0x31, vrid, prio, byte(vips), 0, 100, 0, vrid}
	for i := range vips {
		a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(10 + i)}
		b = append(b, a[:]...)
	}
	return b
}

func runFilter(t *testing.T, prog []bpf.Instruction, pkt []byte) int {
	t.Helper()
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("filter of %d instructions: %v", len(prog), err)
	}
	n, err := vm.Run(pkt)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The quiet programs set aside exactly the patterns' adverts, byte for
// byte, whatever else shares their word 0 (a pattern and its replacement
// of the same priority in one program while a change is applied) or their
// length, and keep every other datagram on the main socket, short or odd
// ones included (they are counted as malformed there).
func TestQuietProgramsMatchByteForByte(t *testing.T) {
	a, b := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	patterns := []QuietPattern{
		{Src: a, Payload: testAdvert(1, 100, 1, 0)},
		{Src: a, Payload: testAdvert(2, 100, 3, 0)},
		{Src: b, Payload: testAdvert(3, 200, 12, 0)},
		{Src: a, Payload: testAdvert(1, 100, 1, 1)}, // word 0 of the first
		{Src: a, Payload: testAdvert(1, 100, 2, 0)}, // and another length
	}
	main, quiet, used := quiet4.quietPrograms(patterns)
	if used != len(patterns) {
		t.Fatalf("%d of %d patterns used", used, len(patterns))
	}
	for i, p := range patterns {
		pkt := datagram(p.Src, p.Payload)
		if m, q := runFilter(t, main, pkt), runFilter(t, quiet, pkt); m != 0 || q != keepDatagram {
			t.Errorf("pattern %d: main %d, quiet %d; want it set aside", i, m, q)
		}
		// Any other byte of the header's checked fields or the payload.
		for _, off := range append([]int{0, 8, 12, 15}, func() (o []int) {
			for j := headerLen; j < len(pkt); j++ {
				o = append(o, j)
			}
			return o
		}()...) {
			other := append([]byte(nil), pkt...)
			other[off] ^= 0x40
			if patternOf(patterns, other) {
				continue // became another pattern's
			}
			if m, q := runFilter(t, main, other), runFilter(t, quiet, other); m != keepDatagram || q != 0 {
				t.Errorf("pattern %d with byte %d changed: main %d, quiet %d; want it read at once", i, off, m, q)
			}
		}
	}
	for name, pkt := range map[string][]byte{
		"an unknown VRID":  datagram(a, testAdvert(9, 100, 1, 0)),
		"a header only":    datagram(a, nil)[:headerLen],
		"a short VRRP":     datagram(a, []byte{0x31, 1, 100, 1})[:headerLen+4],
		"a longer advert":  datagram(a, append(testAdvert(1, 100, 1, 0), 0, 0, 0, 0)),
		"IP options":       func() []byte { d := datagram(a, testAdvert(1, 100, 1, 0)); d[0] = 0x46; return d }(),
		"a forwarded copy": func() []byte { d := datagram(a, testAdvert(1, 100, 1, 0)); d[8] = 254; return d }(),
	} {
		if m, q := runFilter(t, main, pkt), runFilter(t, quiet, pkt); m != keepDatagram || q != 0 {
			t.Errorf("%s: main %d, quiet %d; want it read at once", name, m, q)
		}
	}
	// With no pattern, everything is read at once.
	main, quiet, _ = quiet4.quietPrograms(nil)
	pkt := datagram(a, patterns[0].Payload)
	if m, q := runFilter(t, main, pkt), runFilter(t, quiet, pkt); m != keepDatagram || q != 0 {
		t.Errorf("no patterns: main %d, quiet %d", m, q)
	}
}

func patternOf(ps []QuietPattern, pkt []byte) bool {
	for _, p := range ps {
		if string(datagram(p.Src, p.Payload)) == string(pkt) {
			return true
		}
	}
	return false
}

// Every VRID of an interface fits one program, each with a VIP (the
// N-groups case); the largest adverts fill it before that, and the
// patterns left out are the last ones.
func TestQuietProgramsHoldAllGroups(t *testing.T) {
	src := netip.MustParseAddr("198.51.100.1")
	for _, c := range []struct {
		vips     int
		wantAll  bool
		wantSome int
	}{{1, true, 255}, {2, true, 255}, {12, false, 100}} {
		t.Run(fmt.Sprintf("%d VIPs", c.vips), func(t *testing.T) {
			var ps []QuietPattern
			for vrid := 1; vrid <= 255; vrid++ {
				ps = append(ps, QuietPattern{Src: src, Payload: testAdvert(uint8(vrid), 100, c.vips, 0)})
			}
			main, quiet, used := quiet4.quietPrograms(ps)
			if (used == len(ps)) != c.wantAll || used < c.wantSome || len(main) > bpfMaxInsns || len(quiet) > bpfMaxInsns {
				t.Fatalf("%d of %d patterns in %d/%d instructions", used, len(ps), len(main), len(quiet))
			}
			t.Logf("%d patterns in %d instructions", used, len(main))
			if used < len(ps) {
				if runFilter(t, main, datagram(src, ps[used].Payload)) != keepDatagram {
					t.Errorf("the first pattern left out is set aside")
				}
			}
			if runFilter(t, main, datagram(src, ps[used-1].Payload)) != 0 {
				t.Errorf("the last pattern used is not set aside")
			}
		})
	}
}

// quietFit counts each pattern's block without writing it: the count must
// be what quietBlock writes, or a full program would pass the kernel's
// limit (and be refused) or stop short of it.
func TestQuietFitCountsWhatQuietProgramWrites(t *testing.T) {
	for _, c := range []struct {
		fam quietFamily
		src netip.Addr
	}{{quiet4, netip.MustParseAddr("198.51.100.1")}, {quiet6, netip.MustParseAddr("fe80::1")}} {
		for vips := 1; vips <= 20; vips++ {
			p := QuietPattern{Src: c.src, Payload: testAdvert(7, 100, vips, 0)}
			if c.fam == quiet6 {
				p.Payload = testAdvert6(7, 100, vips)
			}
			if !c.fam.quietable(p) {
				continue
			}
			if got, want := c.fam.blockLen(p), len(c.fam.quietBlock(nil, p, bpf.RetConstant{})); got != want {
				t.Errorf("%v, %d-byte advert: counted %d instructions, quietBlock writes %d", c.src, len(p.Payload), got, want)
			}
		}
		// Filled to the limit: the program holds what quietFit let in,
		// within the limit, and one pattern more would not have fitted.
		var ps []QuietPattern
		for vrid := 1; vrid <= 255; vrid++ {
			// The largest advert each family sets aside.
			p := QuietPattern{Src: c.src, Payload: testAdvert(uint8(vrid), 100, 12, 0)}
			if c.fam == quiet6 {
				p.Payload = testAdvert6(uint8(vrid), 100, 2)
			}
			ps = append(ps, p)
		}
		fit := c.fam.quietFit(ps)
		if len(fit) == 0 || len(fit) == len(ps) {
			t.Fatalf("%v: %d of %d patterns fit; the test wants the limit reached", c.src, len(fit), len(ps))
		}
		// quietFit sizes the head for the longest payload there can be.
		room := bpfMaxInsns - (len(c.fam.quietHead(bpf.RetConstant{}, c.fam.maxPayload()/4)) - len(c.fam.quietHead(bpf.RetConstant{}, longestWords(fit))))
		if n := len(c.fam.mainProgram(fit)); n > room || n+c.fam.blockLen(ps[len(fit)])+3 <= room {
			t.Errorf("%v: %d patterns in %d instructions, room for %d", c.src, len(fit), n, room)
		}
	}
}
