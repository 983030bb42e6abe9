package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

func TestParseGroups(t *testing.T) {
	got, err := parseGroups("1, 16,64,255")
	if err != nil || !slices.Equal(got, []int{1, 16, 64, 255}) {
		t.Errorf("parseGroups = %v, %v", got, err)
	}
	for _, bad := range []string{"0", "256", "x", "16,-1"} {
		if _, err := parseGroups(bad); err == nil {
			t.Errorf("parseGroups(%q) accepted it", bad)
		}
	}
}

func TestParseIntervals(t *testing.T) {
	got, err := parseIntervals("1s,100ms,10ms")
	if err != nil || !slices.Equal(got, []time.Duration{time.Second, 100 * time.Millisecond, 10 * time.Millisecond}) {
		t.Errorf("parseIntervals = %v, %v", got, err)
	}
	for _, bad := range []string{"5ms", "15ms", "41s", "soon"} {
		if _, err := parseIntervals(bad); err == nil {
			t.Errorf("parseIntervals(%q) accepted it", bad)
		}
	}
}

func TestReadBenchTrials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.json")
	br := &lab.BenchResult{Trials: []lab.TrialResult{
		{Daemon: "vipd", Mode: "cut", IntervalMS: 1000, TakeoverExcessMS: 3.5},
		{Daemon: "keepalived", Mode: "kill", IntervalMS: 100},
	}}
	if err := br.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	got, err := readBenchTrials(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].TakeoverExcessMS != 3.5 || got[1].Mode != "kill" {
		t.Errorf("readBenchTrials = %+v", got)
	}
	if _, err := readBenchTrials(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing bench.json was accepted")
	}
}

// Bad flags are refused before anything is built (no root needed).
func TestScaleFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--groups", "300"},
		{"--intervals", "5ms"},
		{"--daemons", "frr"},
		{"--window", "100ms"},
		{"--trials", "-1"},
		{"--rounds", "0"},
		{"--bench", filepath.Join(t.TempDir(), "none.json")},
	} {
		var stderr strings.Builder
		err := runScale(context.Background(), args, io.Discard, &stderr)
		if err == nil || errors.Is(err, errUsage) {
			t.Errorf("%v: err = %v, want a clear error", args, err)
		}
	}
	if err := runScale(context.Background(), []string{"extra"}, io.Discard, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("a stray argument: err = %v, want the usage error", err)
	}
}
