package lab

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sendAdverts sends n VRRPv3 adverts of VRID 51 from node i to the group.
func sendAdverts(t *testing.T, l *Lab, i, n int) {
	t.Helper()
	err := inNetns(l.NodeNetns(i), func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, vrrpProto)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		if err := syscall.SetsockoptIPMreqn(fd, syscall.IPPROTO_IP, syscall.IP_MULTICAST_IF, &syscall.IPMreqn{Ifindex: int32(ifi.Index)}); err != nil {
			return err
		}
		msg := []byte{0x31, VRID, 150, 1, 0, 100, 0, 0, 198, 51, 100, 10}
		for range n {
			if err := syscall.Sendto(fd, msg, 0, &syscall.SockaddrInet4{Addr: [4]byte{224, 0, 0, 18}}); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("send from n%d: %v", i, err)
	}
}

func TestFilterPartitionAndLoss(t *testing.T) {
	l := newTestLab(t, Options{Stranger: true})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	f, err := l.NewFilter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mon, err := l.Watch(ctx, DefaultVIP().Addr(), VRID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()

	if err := f.Partition(ctx, 1); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	sendAdverts(t, l, 1, 10)
	// Towards n2, n3 and the stranger; the client (a bystander) still sees them.
	if got, err := f.Dropped(ctx); err != nil || got != 30 {
		t.Errorf("partition dropped %d adverts (%v), want 30", got, err)
	}
	time.Sleep(50 * time.Millisecond)
	if got := mon.AdvertsFrom(1, before, time.Now()); got != 10 {
		t.Errorf("the client saw %d of n1's 10 adverts", got)
	}
	// ARP and IP flow across the partition.
	if out, err := l.NodeCommand(ctx, 2, "ping", "-n", "-c1", "-W2", l.NodeAddr(1).String()).CombinedOutput(); err != nil {
		t.Errorf("n2 cannot ping n1 across a VRRP partition: %v: %s", err, out)
	}
	if err := f.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.LossTowards(ctx, 2, 100); err != nil {
		t.Fatal(err)
	}
	sendAdverts(t, l, 1, 10)
	if got, err := f.Dropped(ctx); err != nil || got != 10 {
		t.Errorf("100%% loss towards n2 dropped %d adverts (%v), want 10", got, err)
	}
	if err := f.LossTowards(ctx, 2, 101); err == nil {
		t.Error("101% loss accepted")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := netnsCommand(ctx, l.BridgeNS(), "nft", "list", "tables").CombinedOutput()
	if err != nil || strings.Contains(string(out), f.Table()) {
		t.Errorf("table %s still there after Close (%v): %s", f.Table(), err, out)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
