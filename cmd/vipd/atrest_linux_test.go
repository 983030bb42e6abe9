package main

import (
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/vipd/vipd/internal/residency"
)

// The first release at rest drops the binary's pages after its
// collections, not before: the collections read the binary's tables and
// code, and no collection runs at rest to need them again, so what they
// mapped back after an earlier release stayed resident (about 4.7 MiB of
// vipd's 11.4 at one group). The mappings are found before the
// collections, whose garbage the text of smaps then is.
func TestFirstReleaseAtRestDropsTheBinaryAfterItsCollections(t *testing.T) {
	for _, first := range []bool{true, false} {
		var steps []string
		stack := uint64(8 << 20)
		s := restSteps{
			findBinary: func() ([]residency.Region, error) {
				steps = append(steps, "find")
				return []residency.Region{{Start: 0x400000, End: 0x401000, Perms: "r-xp"}}, nil
			},
			collect: func() { steps = append(steps, "collect"); stack /= 2 },
			stacks:  func() uint64 { return stack },
			freeOS:  func() { steps = append(steps, "free") },
			releaseBinary: func([]residency.Region) error {
				steps = append(steps, "release")
				return nil
			},
		}
		s.release(slog.New(slog.DiscardHandler), first)
		want := []string{"find", "collect", "collect", "collect", "collect", "collect", "collect", "free", "release"}
		if !first {
			want = want[1 : len(want)-1] // later bursts keep the binary mapped
		}
		if !slices.Equal(steps, want) {
			t.Errorf("first %v: steps %v, want %v", first, steps, want)
		}
	}
}

// When the binary's mappings cannot be found, the rest of the release
// still runs and nothing is dropped.
func TestReleaseAtRestWithoutTheBinarysMappings(t *testing.T) {
	var steps []string
	restSteps{
		findBinary: func() ([]residency.Region, error) {
			steps = append(steps, "find")
			return nil, errors.New("no smaps")
		},
		collect: func() { steps = append(steps, "collect") },
		stacks:  func() uint64 { return 0 },
		freeOS:  func() { steps = append(steps, "free") },
		releaseBinary: func([]residency.Region) error {
			steps = append(steps, "release")
			return nil
		},
	}.release(slog.New(slog.DiscardHandler), true)
	if want := []string{"find", "collect", "free"}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
}

// The real steps run together: the test binary's mappings are found and
// the release goes through (residency's own tests check what it drops).
func TestReleaseAtRestRuns(t *testing.T) {
	regions, err := residency.ExecutableRegions()
	if err != nil || len(regions) == 0 {
		t.Fatalf("the test binary's mappings: %v, %v", regions, err)
	}
	releaseAtRest(slog.New(slog.DiscardHandler), true)
}
