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

// statFile is /proc/stat kept open: the daemon reads it every few seconds,
// and one pread(2) from offset 0 has the kernel generate it afresh, where
// opening it each time costs a path walk, an open, two reads and a close.
// Only a file of the proc file system is kept open: it is generated at
// each read; any other (a test's copy) is opened at each read, so that
// its removal shows.
type statFile struct {
	fd   int // -1: not open
	keep bool
	buf  []byte
	// path is root's stat, joined once: the file is read every few seconds.
	root, path string
}

func newStatFile() statFile { return statFile{fd: -1} }

func (f *statFile) readCPUTimes(root string) (CPUTimes, error) {
	if f.root != root || f.path == "" {
		f.root, f.path = root, filepath.Join(root, "stat")
	}
	b, err := f.read(f.path)
	if err != nil {
		return CPUTimes{}, err
	}
	return parseProcStat(b)
}

// read returns the whole file. A failure closes it, so that the next call
// opens it again.
func (f *statFile) read(path string) ([]byte, error) {
	if f.fd < 0 {
		fd, err := openProc(path)
		if err != nil {
			return nil, err
		}
		f.fd = fd
		var st syscall.Statfs_t
		f.keep = syscall.Fstatfs(fd, &st) == nil && st.Type == procSuperMagic
	}
	if !f.keep {
		defer func() {
			if f.fd >= 0 {
				syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(f.fd), 0, 0)
				f.fd = -1
			}
		}()
	}
	if f.buf == nil {
		f.buf = make([]byte, 4096)
	}
	for {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_PREAD64, uintptr(f.fd), uintptr(unsafe.Pointer(&f.buf[0])), uintptr(len(f.buf)), 0, 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(f.fd), 0, 0)
			f.fd = -1
			return nil, &fs.PathError{Op: "read", Path: path, Err: errno}
		case int(n) == len(f.buf):
			// It may be longer: the kernel generates it whole for each
			// read from offset 0, so read it again with room to spare.
			f.buf = make([]byte, 2*len(f.buf))
			continue
		}
		return f.buf[:n], nil
	}
}

// procSuperMagic is the proc file system's f_type (PROC_SUPER_MAGIC).
const procSuperMagic = 0x9fa0

func openProc(path string) (int, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	fd, _, errno := syscall.RawSyscall6(syscall.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(p)), syscall.O_RDONLY|syscall.O_CLOEXEC, 0, 0, 0)
	if errno != 0 {
		return -1, &fs.PathError{Op: "open", Path: path, Err: errno}
	}
	return int(fd), nil
}

// readProc reads a small /proc file with raw system calls. os.ReadFile
// would register the file with Go's poller (a PSI file supports poll) and
// wake the poller's thread for it; an ordinary system call wakes the
// runtime's monitor thread. The daemon reads /proc/stat every few seconds
// as it goes (hostTick, through statFile), and a proc file never blocks.
func readProc(path string) ([]byte, error) {
	ifd, err := openProc(path)
	if err != nil {
		return nil, err
	}
	fd := uintptr(ifd)
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
