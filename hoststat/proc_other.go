//go:build !linux

package hoststat

import "errors"

func readPSI(string) PSI { return PSI{unavailable: "not Linux"} }

type statFile struct{}

func newStatFile() statFile { return statFile{} }

func (*statFile) readCPUTimes(string) (CPUTimes, error) { return CPUTimes{}, errors.ErrUnsupported }
