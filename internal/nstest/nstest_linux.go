// Package nstest gives privileged tests fresh, unnamed network namespaces.
// An unnamed namespace lives only while a handle or socket refers to it, so
// nothing outlives the test process even when a test dies.
package nstest

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// RequireRoot skips t unless it runs as root; hint says how to run it, e.g.
// "sudo go test ./netif".
func RequireRoot(t testing.TB, hint string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to create network namespaces and veth pairs; run the tests as root, e.g. " + hint)
	}
}

// New returns a fresh network namespace, closed at the end of the test.
func New(t testing.TB) netns.NsHandle {
	t.Helper()
	var ns netns.NsHandle
	if err := onThread(func() (err error) { ns, err = netns.New(); return err }); err != nil {
		t.Fatalf("new namespace: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// Do runs fn on an OS thread inside ns, for example to open a socket there:
// sockets keep the namespace they were opened in.
func Do(ns netns.NsHandle, fn func() error) error {
	return onThread(func() error {
		if err := netns.Set(ns); err != nil {
			return err
		}
		return fn()
	})
}

// onThread runs fn on a locked OS thread of a new goroutine and moves the
// thread back to the original namespace; if that fails the thread stays
// locked and the runtime discards it rather than reuse a foreign namespace.
func onThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		err = fn()
		if rerr := netns.Set(orig); rerr != nil {
			errc <- fmt.Errorf("back to the original namespace: %w", rerr)
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}
