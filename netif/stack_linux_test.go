package netif

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/vipd/vipd/internal/nstest"
)

// The netlink library reads every answer into a 64 KiB array on the
// stack: a goroutine that made a request itself held a 128 KiB stack
// until the collector halved it, five collections later. The daemon makes
// its requests from every election (a takeover of 255 groups: 32 MB), so
// the Manager makes them on a goroutine of its own.
func TestCallersKeepSmallStacks(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, _ := addVeth(t, h, "vip0", "peer0")
	addAddr(t, h, vip0, hostAddr)
	m := newTestManager(t, ns)
	if _, err := m.Link("vip0"); err != nil { // the Manager's own goroutine grows once
		t.Fatal(err)
	}

	const callers = 50
	base := stackInuse()
	park := make(chan struct{})
	defer close(park)
	errs := make(chan error, callers)
	for i := range callers {
		go func() {
			vip := netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i + 1)}), 32)
			_, err := m.Link("vip0")
			if err == nil {
				_, err = m.PrimaryIPv4("vip0", nil)
			}
			if err == nil {
				err = m.AddVIP("vip0", vip, "")
			}
			if err == nil {
				err = m.RemoveVIP("vip0", vip)
			}
			errs <- err
			<-park
		}()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if per := (int64(stackInuse()) - int64(base)) / callers; per > 16<<10 {
		t.Errorf("a goroutine that called the Manager holds %d KiB of stack, want at most 16", per>>10)
	}
}

func stackInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}
