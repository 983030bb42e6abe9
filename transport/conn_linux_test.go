package transport

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
	"github.com/vipd/vipd/vrrp"
)

func newLab(t *testing.T, nodes int) *lab.Lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to create network namespaces and raw sockets (run as root, e.g. sudo go test)")
	}
	l, err := lab.New(context.Background(), slog.New(slog.DiscardHandler), lab.Options{Nodes: nodes})
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// listenOn opens a Conn on eth0 of node i.
func listenOn(t *testing.T, l *lab.Lab, i int, unicast bool) Conn {
	t.Helper()
	var c Conn
	err := lab.RunInNetns(l.NodeNetns(i), func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		c, err = Listen(ifi, Options{Source: l.NodeAddr(i), Unicast: unicast})
		return err
	})
	if err != nil {
		t.Fatalf("Listen on n%d: %v", i, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readOne(t *testing.T, c Conn) ([]byte, PacketInfo, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	b := make([]byte, 1500)
	n, info, err := c.ReadFrom(b)
	return b[:n], info, err
}

func encode(t *testing.T, src, dst netip.Addr) []byte { return encodeAdvert(t, src, dst, 51, 100) }

// encodeAdvert is an advert of vrid at prio for the lab's VIP.
func encodeAdvert(t *testing.T, src, dst netip.Addr, vrid, prio uint8) []byte {
	t.Helper()
	adv := vrrp.Advertisement{VRID: vrid, Priority: prio, Interval: time.Second, Addresses: []netip.Addr{lab.DefaultVIP().Addr()}}
	b, err := adv.Append(nil, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMulticast(t *testing.T) {
	l := newLab(t, 2)
	a, b := listenOn(t, l, 1, false), listenOn(t, l, 2, false)
	pkt := encode(t, l.NodeAddr(1), vrrp.GroupIPv4)
	if err := a.WriteTo(pkt, vrrp.GroupIPv4); err != nil {
		t.Fatal(err)
	}
	got, info, err := readOne(t, b)
	if err != nil {
		t.Fatalf("n2 read: %v", err)
	}
	if string(got) != string(pkt) {
		t.Errorf("payload %x, want %x", got, pkt)
	}
	want := PacketInfo{Src: l.NodeAddr(1), Dst: vrrp.GroupIPv4, TTL: 255, IfIndex: info.IfIndex}
	if info != want || info.IfIndex == 0 {
		t.Errorf("info %+v, want %+v", info, want)
	}
	var adv vrrp.Advertisement
	if err := adv.Decode(got, info.Src, info.Dst); err != nil {
		t.Errorf("received advert does not decode: %v", err)
	}
	// No loopback of our own packets.
	if _, _, err := readOne(t, a); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("sender read its own advert back: %v", err)
	}
}

// A Master sends an advert each interval: sending allocates nothing, or
// each advert would be garbage for the collector to wake for.
func TestWriteToAllocatesNothing(t *testing.T) {
	l := newLab(t, 2)
	for _, unicast := range []bool{false, true} {
		a := listenOn(t, l, 1, unicast)
		dst := vrrp.GroupIPv4
		if unicast {
			dst = l.NodeAddr(2)
		}
		pkt := encode(t, l.NodeAddr(1), dst)
		if n := testing.AllocsPerRun(100, func() {
			if err := a.WriteTo(pkt, dst); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("unicast %v: WriteTo allocates %v times an advert, want none", unicast, n)
		}
		a.Close()
	}
}

func TestUnicast(t *testing.T) {
	l := newLab(t, 2)
	a, b := listenOn(t, l, 1, true), listenOn(t, l, 2, true)
	dst := l.NodeAddr(2)
	pkt := encode(t, l.NodeAddr(1), dst)
	if err := a.WriteTo(pkt, dst); err != nil {
		t.Fatal(err)
	}
	got, info, err := readOne(t, b)
	if err != nil {
		t.Fatalf("n2 read: %v", err)
	}
	if info.Src != l.NodeAddr(1) || info.Dst != dst || info.TTL != 255 {
		t.Errorf("info %+v", info)
	}
	var adv vrrp.Advertisement
	if err := adv.Decode(got, info.Src, info.Dst); err != nil {
		t.Errorf("unicast advert does not decode: %v", err)
	}
}

func TestReadDeadlineUnblocks(t *testing.T) {
	l := newLab(t, 1)
	c := listenOn(t, l, 1, false)
	done := make(chan error, 1)
	go func() {
		_, _, err := c.ReadFrom(make([]byte, 1500))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	c.SetReadDeadline(time.Unix(1, 0))
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a past deadline did not unblock ReadFrom")
	}
}

// Receive takes datagrams in batches inside one wait of the poller: a
// burst longer than a batch, then a datagram after a pause (a new edge for
// the poller, with no read that heard EAGAIN in between), all arrive, in
// order; a past deadline ends it.
func TestReceiveBatchesAndWaits(t *testing.T) {
	l := newLab(t, 2)
	a, b := listenOn(t, l, 1, false), listenOn(t, l, 2, false)
	r, ok := b.(Receiver)
	if !ok {
		t.Fatalf("the IPv4 Conn %T is not a Receiver", b)
	}
	got := make(chan int, 64)
	done := make(chan error, 1)
	send := func(prio int) {
		if err := a.WriteTo(encodeAdvert(t, l.NodeAddr(1), vrrp.GroupIPv4, 51, uint8(prio)), vrrp.GroupIPv4); err != nil {
			t.Fatal(err)
		}
	}
	// Queued before Receive starts: it finds full batches.
	const burst = 3*receiveBatch + 1
	for i := 1; i <= burst; i++ {
		send(i)
	}
	time.Sleep(20 * time.Millisecond)
	bursts := 0
	go func() {
		for {
			err := r.Receive(func(p []byte, info PacketInfo) {
				var adv vrrp.Advertisement
				if err := adv.Decode(p, info.Src, info.Dst); err != nil {
					t.Errorf("datagram does not decode: %v", err)
					return
				}
				got <- int(adv.Priority)
			})
			if err != nil {
				done <- err
				return
			}
			bursts++ // a full batch: Receive returns so the caller may stop
		}
	}()
	expect := func(want int) {
		t.Helper()
		select {
		case p := <-got:
			if p != want {
				t.Fatalf("received priority %d, want %d (in order)", p, want)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("priority %d never received", want)
		}
	}
	for i := 1; i <= burst; i++ {
		expect(i)
	}
	for i := range 3 {
		time.Sleep(50 * time.Millisecond)
		send(200 + i)
		expect(200 + i)
	}
	b.SetReadDeadline(time.Unix(1, 0))
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Receive ended with %v", err)
		}
		if bursts == 0 {
			t.Error("a burst of several full batches never returned to the caller")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a past deadline did not end Receive")
	}
}

// A Backup's read of a batch of adverts allocates nothing.
func TestReceiveAllocatesNothing(t *testing.T) {
	l := newLab(t, 2)
	a, b := listenOn(t, l, 1, false), listenOn(t, l, 2, false)
	receiveAllocs(t, a, b, encode(t, l.NodeAddr(1), vrrp.GroupIPv4), vrrp.GroupIPv4)
}

// receiveAllocs fails t if b's Receive allocates while it reads pkt, sent
// by a to dst.
func receiveAllocs(t *testing.T, a, b Conn, pkt []byte, dst netip.Addr) {
	t.Helper()
	r, ok := b.(Receiver)
	if !ok {
		t.Fatalf("the Conn %T is not a Receiver", b)
	}
	// Far off: it only stops a Receive that would wait for ever.
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	var received int
	count := func(p []byte, info PacketInfo) {
		if len(p) == len(pkt) && info.TTL == 255 {
			received++
		}
	}
	// A sender that never stops, so that every Receive finds a full
	// batch however the kernel paces delivery; it allocates nothing
	// either.
	var stop atomic.Bool
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for !stop.Load() {
			if err := a.WriteTo(pkt, dst); err != nil {
				t.Error(err)
				return
			}
			runtime.Gosched()
		}
	}()
	defer func() { stop.Store(true); <-sent }()
	n := testing.AllocsPerRun(50, func() {
		for before := received; received < before+receiveBatch; {
			if err := r.Receive(count); err != nil {
				t.Fatalf("Receive: %v", err)
			}
		}
	})
	if n != 0 {
		t.Errorf("Receive allocates %v times a batch of %d adverts, want none", n, receiveBatch)
	}
}
