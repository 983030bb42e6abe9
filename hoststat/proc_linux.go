package hoststat

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

func readPSI(root string) PSI {
	var psi PSI
	for _, r := range []struct {
		file string
		dst  *Pressure
	}{{"cpu", &psi.CPU}, {"io", &psi.IO}, {"memory", &psi.Memory}} {
		b, err := os.ReadFile(filepath.Join(root, "pressure", r.file))
		if err != nil {
			// No such file: no CONFIG_PSI; EOPNOTSUPP: booted with psi=0.
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) {
				return PSI{unavailable: "kernel without PSI"}
			}
			return PSI{unavailable: err.Error()}
		}
		p, err := ParsePressure(string(b))
		if err != nil {
			return PSI{unavailable: err.Error()}
		}
		*r.dst = p
	}
	psi.Available = true
	return psi
}

func readCPUTimes(root string) (CPUTimes, error) {
	b, err := os.ReadFile(filepath.Join(root, "stat"))
	if err != nil {
		return CPUTimes{}, err
	}
	return ParseProcStat(string(b))
}
