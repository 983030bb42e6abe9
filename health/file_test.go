package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFile(t *testing.T) {
	dir := t.TempDir()
	drain := filepath.Join(dir, "drain")
	c := mustChecker(t, Spec{Name: "drain", Type: File, Weight: -254, Path: drain}.WithDefaults())

	checkResult(t, c, true, drain+" absent")
	if err := os.WriteFile(drain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	checkResult(t, c, false, drain+" exists")
	if err := os.Remove(drain); err != nil {
		t.Fatal(err)
	}
	// A directory or a dangling symlink is there too.
	if err := os.Mkdir(drain, 0o755); err != nil {
		t.Fatal(err)
	}
	checkResult(t, c, false, drain+" exists")
	if err := os.Remove(drain); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), drain); err != nil {
		t.Fatal(err)
	}
	checkResult(t, c, false, drain+" exists")
	if err := os.Remove(drain); err != nil {
		t.Fatal(err)
	}
	checkResult(t, c, true, drain+" absent")
}

// TestFileError: a switch that cannot be looked at is not taken as off.
func TestFileError(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(notDir, "drain")
	got := mustChecker(t, Spec{Name: "drain", Type: File, Path: path}.WithDefaults()).Check(t.Context())
	if got.OK || !strings.Contains(got.Detail, path) || !strings.Contains(got.Detail, "not a directory") {
		t.Errorf("Check() = %+v, want a failure naming the path and the error", got)
	}
}
