package control

import (
	"net"

	"golang.org/x/sys/unix"
)

func peerOf(conn *net.UnixConn) peerCred {
	raw, err := conn.SyscallConn()
	if err != nil {
		return peerCred{}
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || serr != nil {
		return peerCred{}
	}
	return peerCred{ok: true, uid: int(cred.Uid), pid: int(cred.Pid)}
}
