package daemon

import (
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/vrrp"
)

var testVIP6 = netip.MustParsePrefix("2001:db8::10/128")

// dualStack is an IPv4 leader and the IPv6 instance that follows it.
func dualStack(prio uint8) []config.Instance {
	v4 := testInstance(prio)
	v4.Name = "api-v4"
	v6 := testInstance(prio)
	v6.Name, v6.Follow = "api-v6", "api-v4"
	v6.VIPs = []netip.Prefix{testVIP6}
	return []config.Instance{v4, v6}
}

// Issue 13, dual-stack: the two addresses are always owned together.
func TestDualStackAddressesMoveTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		a := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{}, dualStack(150)...)
		b := startCfgNode(t, newFakeHost(lan, "198.51.100.12"), Options{}, dualStack(100)...)
		together := func(when string, owner *cfgNode) {
			t.Helper()
			for _, n := range []*cfgNode{a, b} {
				want := n == owner
				if n.host.holds(testVIP) != want || n.host.holds(testVIP6) != want {
					t.Errorf("%s: host %v holds v4 %v, v6 %v; want both %v", when, n.host.addr, n.host.holds(testVIP), n.host.holds(testVIP6), want)
				}
			}
		}
		time.Sleep(10 * time.Second)
		together("after the election", a)
		if st := a.status("api-v6"); st.State != vrrp.StateMaster || st.LastChange.Reason != vrrp.ReasonLeader {
			t.Errorf("a's follower: %v (%v)", st.State, st.LastChange.Reason)
		}

		// Only the IPv6 adverts are lost: nothing moves; the follower's own
		// election does not take over.
		lan.mu.Lock()
		lan.noIPv6 = true
		lan.mu.Unlock()
		time.Sleep(20 * time.Second)
		together("with the IPv6 adverts lost", a)
		lan.mu.Lock()
		lan.noIPv6 = false
		lan.mu.Unlock()

		// a fails: b's leader takes over and its follower with it at once.
		a.host.setCarrier(false)
		time.Sleep(5 * time.Second)
		together("after a's link went down", b)
		// a returns and preempts: both come back.
		a.host.setCarrier(true)
		time.Sleep(10 * time.Second)
		together("after a's return", a)
		// A graceful stop of a moves both, make-before-break.
		a.cancel()
		<-a.done
		a.done <- nil
		time.Sleep(5 * time.Second)
		if !b.host.holds(testVIP) || !b.host.holds(testVIP6) {
			t.Errorf("after a's stop: b holds v4 %v, v6 %v", b.host.holds(testVIP), b.host.holds(testVIP6))
		}
	})
}
