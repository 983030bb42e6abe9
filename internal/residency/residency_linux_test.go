package residency

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

const sampleSmaps = `00400000-00c00000 r-xp 00000000 08:01 1234 /usr/sbin/vipd
Size:               8192 kB
Rss:                6000 kB
Anonymous:             0 kB
Swap:                  0 kB
00c00000-01400000 r--p 00800000 08:01 1234 /usr/sbin/vipd
Rss:                5000 kB
Anonymous:             4 kB
Swap:                  0 kB
01400000-01500000 rw-p 01000000 08:01 1234 /usr/sbin/vipd
Anonymous:           100 kB
Swap:                  0 kB
01500000-01600000 r--p 01100000 08:01 1234 /usr/sbin/vipd
Anonymous:             0 kB
Swap:                  8 kB
01600000-01700000 r--p 01200000 08:01 1234 /usr/sbin/vipd
Anonymous:             0 kB
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
Anonymous:          2048 kB
Swap:                  0 kB
7f0000200000-7f0000300000 r--p 00000000 08:01 99 /usr/lib/name with spaces.so
Anonymous:             0 kB
Swap:                  0 kB
`

func TestParseSmaps(t *testing.T) {
	got := parseSmaps([]byte(sampleSmaps))
	counted := func(m mapping) mapping { m.hasAnonymous, m.hasSwap = true, true; return m }
	want := []mapping{
		counted(mapping{start: 0x400000, end: 0xc00000, perms: "r-xp", path: "/usr/sbin/vipd"}),
		counted(mapping{start: 0xc00000, end: 0x1400000, perms: "r--p", path: "/usr/sbin/vipd", anonymous: 4}),
		counted(mapping{start: 0x1400000, end: 0x1500000, perms: "rw-p", path: "/usr/sbin/vipd", anonymous: 100}),
		counted(mapping{start: 0x1500000, end: 0x1600000, perms: "r--p", path: "/usr/sbin/vipd", swap: 8}),
		{start: 0x1600000, end: 0x1700000, perms: "r--p", path: "/usr/sbin/vipd", hasAnonymous: true},
		counted(mapping{start: 0x7f0000000000, end: 0x7f0000100000, perms: "rw-p", anonymous: 2048}),
		counted(mapping{start: 0x7f0000200000, end: 0x7f0000300000, perms: "r--p", path: "/usr/lib/name with spaces.so"}),
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %d mappings, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// Of these only the code qualifies: the constant data holds a private
	// copy (a relocated page), resident or swapped out, or smaps did not
	// say; the rest is writable or not the binary.
	var n int
	for _, m := range got {
		if releasable(m, "/usr/sbin/vipd") {
			n++
			if m.start != 0x400000 {
				t.Errorf("would release %+v", m)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d mappings releasable, want 1", n)
	}
}

func rssFileKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.Fields(v)[0])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// The test binary's own code and constants are released, its writable data
// never, and it runs on: the pages it needs come back.
func TestReleaseExecutableDropsTheBinarysPages(t *testing.T) {
	written[0], written[len(written)-1] = 42, 7
	before := rssFileKB(t)
	regions, err := ReleaseExecutable()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	if len(regions) == 0 {
		t.Fatal("nothing released")
	}
	if after >= before {
		t.Errorf("RssFile %d kB before, %d kB after: nothing was released", before, after)
	}
	t.Logf("RssFile %d kB -> %d kB, %d mappings", before, after, len(regions))
	// The binary's writable data (a page of its own since it was written)
	// keeps what was written, and code runs on.
	if written[0] != 42 || written[len(written)-1] != 7 {
		t.Errorf("the binary's data lost what was written: %d, %d", written[0], written[len(written)-1])
	}
	if got := strconv.Itoa(1 << 20); got != "1048576" {
		t.Errorf("strconv after the release: %q", got)
	}
}

// written lives in the test binary's writable file-backed data (it has
// an initial value), and is written before
// the release.
var written = [8192]byte{1: 1}
