package control

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vipd/vipd/config"
)

// ErrInUse means another process, most likely a running vipd, listens on
// the control socket. Listen does not take a live socket over: the other
// daemon would keep running without a way to reach it.
var ErrInUse = errors.New("control socket in use")

const (
	socketMode = 0o660 // root and the configured group
	dirMode    = 0o755
	// maxSocketPath is sizeof(sun_path) less the NUL.
	maxSocketPath = 107
	// probeTimeout bounds the connect that tells a live socket from a
	// stale one; a local connect answers at once unless the peer is wedged.
	probeTimeout = time.Second
)

// Server is a listening control socket. Create it with Listen, then call
// Serve once; Close releases it without serving.
type Server struct {
	log  *slog.Logger
	path string
	ln   *net.UnixListener
	// self identifies our socket file, so that Close removes only ours and
	// never the socket of a daemon that took the path over since.
	self fs.FileInfo
	// requestTimeout is a field so tests can make it long enough that a
	// silent client would visibly block others if it could.
	requestTimeout time.Duration

	// daemon, when set, goes with every status answer; host adds the
	// host's figures of the moment to it.
	daemon *DaemonInfo
	host   func() *HostStat
	bgp    func() []BGPPeer
	drops  func() map[string]map[string]uint64

	serving   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Listen creates the control socket at path (config.DefaultSocket when
// empty) with mode 0660 and, when group is not empty, the given group (a
// name or a numeric gid). A missing directory is created 0755. A socket
// left behind by a crashed daemon is replaced; one that a running daemon
// listens on is left alone and Listen returns an error wrapping ErrInUse.
func Listen(path, group string, log *slog.Logger, opts ...ServerOption) (*Server, error) {
	if path == "" {
		path = config.DefaultSocket
	}
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("control socket %s: path longer than %d bytes", path, maxSocketPath)
	}
	gid, err := lookupGroup(group)
	if err != nil {
		return nil, err
	}
	if err := ensureDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStale(path, log); err != nil {
		return nil, err
	}
	ln, self, err := bind(path, gid)
	if err != nil {
		return nil, err
	}
	log.Debug("control socket listening", "path", path, "group", group)
	s := &Server{log: log, path: path, ln: ln, self: self, requestTimeout: requestTimeout}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// A ServerOption configures Listen.
type ServerOption func(*Server)

// WithDaemonInfo makes the server answer every status request with info
// about the daemon beside the instances, so that `vipd status` tells which
// binary runs and since when.
func WithDaemonInfo(info DaemonInfo) ServerOption {
	return func(s *Server) { s.daemon = &info }
}

// WithHostStats adds the host's pressure and CPU steal, read at each
// status request, to the daemon's info.
func WithHostStats(f func() *HostStat) ServerOption {
	return func(s *Server) { s.host = f }
}

// WithBGPPeers adds the BGP speaker's peers, read at each status request,
// to the daemon's info.
func WithBGPPeers(f func() []BGPPeer) ServerOption {
	return func(s *Server) { s.bgp = f }
}

// WithInterfaceDrops adds the adverts no instance claimed, per interface
// and reason, read at each status request, to the daemon's info.
func WithInterfaceDrops(f func() map[string]map[string]uint64) ServerOption {
	return func(s *Server) { s.drops = f }
}

// lookupGroup returns the gid of a group name or number; -1 for "", which
// leaves the socket in the daemon's own group.
func lookupGroup(group string) (int, error) {
	if group == "" {
		return -1, nil
	}
	if gid, err := strconv.Atoi(group); err == nil {
		if gid < 0 {
			return 0, fmt.Errorf("control socket group %q: not a valid gid", group)
		}
		return gid, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("control socket group: %w", err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("control socket group %q: gid %q is not a number", group, g.Gid)
	}
	return gid, nil
}

func ensureDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("control socket directory %s is not a directory", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("control socket directory: %w", err)
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("control socket directory: %w", err)
	}
	// MkdirAll's mode passes through the umask; the directory must be
	// searchable by the socket's group.
	if err := os.Chmod(dir, dirMode); err != nil {
		return fmt.Errorf("control socket directory: %w", err)
	}
	return nil
}

// removeStale removes a socket file nobody listens on. Anything else at
// the path (a live socket, a regular file) is an error: we never delete
// what we cannot prove is ours to replace.
func removeStale(path string, log *slog.Logger) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("control socket %s: the path exists and is not a socket; not replacing it", path)
	}
	conn, err := net.DialTimeout("unix", path, probeTimeout)
	if err == nil {
		conn.Close()
		return fmt.Errorf("%w: %s: another vipd is running (stop it, or give this one another global.socket)", ErrInUse, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		// EAGAIN (a full backlog) or a timeout mean someone is there.
		return fmt.Errorf("%w: %s: cannot tell whether another daemon listens: %v", ErrInUse, path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("control socket: removing a stale socket: %w", err)
	}
	log.Info("replaced a stale control socket", "path", path)
	return nil
}

// bind listens on a temporary name, sets mode and group there, and only
// then links the socket to path: the socket never shows at path with the
// umask's mode, and the link fails rather than replace a socket that
// another daemon created since removeStale looked.
func bind(path string, gid int) (*net.UnixListener, fs.FileInfo, error) {
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".vipd-%d.sock", os.Getpid()))
	if len(tmp) > maxSocketPath {
		return nil, nil, fmt.Errorf("control socket %s: directory name too long", path)
	}
	// A leftover of ours from a crash under the same PID.
	_ = os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("control socket: %w", err)
	}
	// Close must not unlink by name: the name it knows is tmp, and path
	// may belong to another daemon by then.
	ln.SetUnlinkOnClose(false)
	fail := func(err error) (*net.UnixListener, fs.FileInfo, error) {
		ln.Close()
		os.Remove(tmp)
		return nil, nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if err := os.Chmod(tmp, socketMode); err != nil {
		return fail(err)
	}
	if gid >= 0 {
		if err := setGroup(tmp, gid); err != nil {
			return fail(err)
		}
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%w: another process created it just now", ErrInUse)
		}
		return fail(err)
	}
	os.Remove(tmp)
	self, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return ln, self, nil
}

// setGroup changes the file's group only when it differs: the socket of a
// daemon whose own group is the configured one needs no chown, which a
// unit's system call filter (@privileged includes @chown) may forbid.
func setGroup(path string, gid int) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Gid) == gid {
		return nil
	}
	if err := os.Chown(path, -1, gid); err != nil {
		return fmt.Errorf("setting group %d: %w", gid, err)
	}
	return nil
}

// Close stops listening and removes the socket file if it is still ours.
// Serve calls it on return; calling it again is harmless.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.ln.Close()
		if fi, err := os.Lstat(s.path); err == nil && os.SameFile(fi, s.self) {
			if err := os.Remove(s.path); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}
