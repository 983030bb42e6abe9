package hoststat

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
)

func readPSI(root string) PSI {
	var psi PSI
	for _, r := range []struct {
		file string
		dst  *Pressure
	}{{"cpu", &psi.CPU}, {"io", &psi.IO}, {"memory", &psi.Memory}} {
		b, err := readProc(filepath.Join(root, "pressure", r.file))
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
	b, err := readProc(filepath.Join(root, "stat"))
	if err != nil {
		return CPUTimes{}, err
	}
	return ParseProcStat(string(b))
}

// readProc reads a small /proc file with plain system calls. os.ReadFile
// would register the file with Go's poller (a PSI file supports poll) and
// wake the poller's thread for it: four wake-ups a second for nothing.
func readProc(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
