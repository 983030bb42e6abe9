//go:build !linux

package residency

import "errors"

// Region is one mapping of the executable that can be released.
type Region struct {
	Start, End uint64
	Perms      string
}

// ReleaseExecutable is Linux only.
func ReleaseExecutable() ([]Region, error) {
	return nil, errors.New("residency: Linux only")
}

// ExecutableRegions is Linux only.
func ExecutableRegions() ([]Region, error) {
	return nil, errors.New("residency: Linux only")
}

// Release is Linux only.
func Release([]Region) error { return errors.New("residency: Linux only") }
