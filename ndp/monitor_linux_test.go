package ndp

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/vipd/vipd/arp"
	"golang.org/x/sys/unix"
)

// When its link goes down a packet socket reports ENETDOWN once and then
// works again; Run must carry on.
func TestMonitorRunSurvivesNetDown(t *testing.T) {
	conn := newFakeConn()
	conn.reads <- fakeRead{err: &os.SyscallError{Syscall: "recvfrom", Err: unix.ENETDOWN}}
	conn.reads <- fakeRead{err: fmt.Errorf("wrapped: %w", unix.ENETDOWN)}
	conn.reads <- fakeRead{b: ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []arp.Claim
	err := NewMonitor(ourIfi, conn).Run(ctx, func(c arp.Claim) {
		got = append(got, c)
		cancel()
	})
	if err != nil || len(got) != 1 || got[0].IP != testVIP {
		t.Errorf("Run = %v, claims %v; want nil and one for %v", err, got, testVIP)
	}
}
