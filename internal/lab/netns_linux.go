package lab

import (
	"fmt"
	"net"
	"os/exec"
	"runtime"

	"github.com/vishvananda/netns"
)

// inNetns runs fn on an OS thread switched into ns and waits for it. The
// goroutine exits without unlocking the thread, so the runtime discards the
// thread instead of handing a foreign namespace to unrelated goroutines.
// Sockets opened by fn stay in ns for their whole life.
func inNetns(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("enter netns: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// listenIn opens a packet socket inside ns (e.g. "ip4:icmp").
func listenIn(ns netns.NsHandle, network, address string) (net.PacketConn, error) {
	var c net.PacketConn
	err := inNetns(ns, func() error {
		var err error
		c, err = net.ListenPacket(network, address)
		return err
	})
	return c, err
}

// addNamedNetns uses iproute2 rather than netns.NewNamed so /run/netns gets
// the shared mount propagation that `ip netns exec` and `ip netns del` expect.
func addNamedNetns(name string) (netns.NsHandle, error) {
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return netns.None(), fmt.Errorf("ip netns add %s: %w: %s", name, err, out)
	}
	h, err := netns.GetFromName(name)
	if err != nil {
		_ = delNamedNetns(name)
		return netns.None(), fmt.Errorf("open netns %s: %w", name, err)
	}
	return h, nil
}

func delNamedNetns(name string) error {
	out, err := exec.Command("ip", "netns", "del", name).CombinedOutput()
	if err != nil {
		if h, gerr := netns.GetFromName(name); gerr != nil {
			return nil // already gone: deleting is idempotent
		} else {
			h.Close()
		}
		return fmt.Errorf("ip netns del %s: %w: %s", name, err, out)
	}
	return nil
}
