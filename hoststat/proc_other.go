//go:build !linux

package hoststat

import "errors"

func readPSI(string) PSI { return PSI{unavailable: "not Linux"} }

func readCPUTimes(string) (CPUTimes, error) { return CPUTimes{}, errors.ErrUnsupported }
