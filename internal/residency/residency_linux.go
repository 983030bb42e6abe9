package residency

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Region is one mapping of the executable that can be released.
type Region struct {
	Start, End uint64
	Perms      string
}

// ReleaseExecutable drops this process's mappings of the read-only pages of
// its executable (code and constant data), which start-up faulted in by the
// megabyte: parsing, package initialisation (the embedded BGP library
// registers thousands of descriptors), and the kernel's fault-around of 64
// KiB at every first touch. The page cache keeps them, so a page the
// process runs again is mapped back by a minor fault; what stays resident
// is what it uses at rest. Only mappings that were never writable and hold
// no private copy (Anonymous 0 in smaps) are released: dropping those can
// lose nothing.
func ReleaseExecutable() ([]Region, error) {
	regions, err := ExecutableRegions()
	if err != nil {
		return nil, err
	}
	return regions, Release(regions)
}

// ExecutableRegions finds the mappings ReleaseExecutable would drop,
// without dropping them: a caller that has work to do first (collections,
// which read the binary's tables) finds them before, while it may still
// allocate, and releases them after with Release, which does not.
func ExecutableRegions() ([]Region, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	var regions []Region
	for _, m := range parseSmaps(smaps) {
		if releasable(m, exe) {
			regions = append(regions, Region{Start: m.start, End: m.end, Perms: m.perms})
		}
	}
	return regions, nil
}

// Release drops the pages of regions from ExecutableRegions. It allocates
// nothing, so it touches no page it has just dropped for its own sake.
func Release(regions []Region) error {
	for _, r := range regions {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(r.Start), uintptr(r.End-r.Start), unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("madvise %x-%x: %w", r.Start, r.End, errno)
		}
	}
	return nil
}

// releasable: a private mapping of exe, not writable, with no page of its
// own, resident or swapped out (a relocated page would be one, and
// dropping it would lose it). A mapping whose counts smaps did not give is
// kept.
func releasable(m mapping, exe string) bool {
	return m.path == exe && !strings.ContainsRune(m.perms, 'w') && strings.HasSuffix(m.perms, "p") &&
		m.hasAnonymous && m.hasSwap && m.anonymous == 0 && m.swap == 0
}

type mapping struct {
	start, end            uint64
	perms                 string
	path                  string
	anonymous, swap       int64 // kB
	hasAnonymous, hasSwap bool  // smaps gave them
}

// parseSmaps reads /proc/PID/smaps: a header line per mapping ("start-end
// perms offset dev inode path"), then "Key: value kB" lines.
func parseSmaps(b []byte) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if key, ok := strings.CutSuffix(f[0], ":"); ok {
			if len(out) == 0 || len(f) < 2 || key != "Anonymous" && key != "Swap" {
				continue
			}
			m := &out[len(out)-1]
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				n = -1 // unreadable: counts as a page of its own
			}
			if key == "Anonymous" {
				m.anonymous, m.hasAnonymous = n, true
			} else {
				m.swap, m.hasSwap = n, true
			}
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok || len(f) < 5 {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		m := mapping{start: start, end: end, perms: f[1]}
		if len(f) >= 6 {
			m.path = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out
}
