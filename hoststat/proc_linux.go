package hoststat

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"unsafe"
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

// readProc reads a small /proc file with raw system calls. os.ReadFile
// would register the file with Go's poller (a PSI file supports poll) and
// wake the poller's thread for it; an ordinary system call wakes the
// runtime's monitor thread. The daemon reads /proc/stat every few seconds
// as it goes (hostTick), and a proc file never blocks.
func readProc(path string) ([]byte, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	fd, _, errno := syscall.RawSyscall6(syscall.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(p)), syscall.O_RDONLY|syscall.O_CLOEXEC, 0, 0, 0)
	if errno != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errno}
	}
	defer syscall.RawSyscall(syscall.SYS_CLOSE, fd, 0, 0)
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		free := buf[len(buf):cap(buf)]
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&free[0])), uintptr(len(free)))
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return nil, &fs.PathError{Op: "read", Path: path, Err: errno}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+int(n)]
	}
}

// atFDCWD is AT_FDCWD (-100) as the system call takes it: openat relative
// to the working directory (the paths here are absolute).
const atFDCWD = ^uintptr(99)
