package arp

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// When its link goes down a packet socket reports ENETDOWN once and then
// works again; Run must carry on.
func TestMonitorRunSurvivesNetDown(t *testing.T) {
	conn := newFakeConn()
	conn.reads <- fakeRead{err: &os.SyscallError{Syscall: "recvfrom", Err: unix.ENETDOWN}}
	conn.reads <- fakeRead{err: fmt.Errorf("wrapped: %w", unix.ENETDOWN)}
	conn.reads <- fakeRead{b: claimFrame(t, OperationRequest, testVIP, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []netip.Addr
	err := NewMonitor(ourIfi, conn).Run(ctx, func(c Claim) {
		got = append(got, c.IP)
		cancel()
	})
	if err != nil || len(got) != 1 || got[0] != testVIP {
		t.Errorf("Run = %v, claims %v; want nil and [%v]", err, got, testVIP)
	}
}
