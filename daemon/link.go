package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/netif"
	"github.com/vipd/vipd/transport"
)

// errTentative: the interface's IPv6 link-local address is still in
// duplicate address detection; adverts cannot go out from it yet.
var errTentative = errors.New("the link-local address is still tentative (duplicate address detection)")

// source is the address adverts go out from: unicast_source, or the
// interface's primary IPv4 address, or for IPv6 its link-local address
// once it has left the tentative state (RFC 5798 section 5.1.2.2).
func (in *instance) source(ic *config.Instance) (netip.Addr, error) {
	if ic.UnicastSource.IsValid() {
		return ic.UnicastSource, nil
	}
	if !ic.IPv6() {
		return in.env.Links.PrimaryIPv4(ic.Interface, ic.VIPs)
	}
	ll, tentative, err := in.env.Links.LinkLocal(ic.Interface)
	if err != nil {
		return netip.Addr{}, err
	}
	if tentative {
		return netip.Addr{}, errTentative
	}
	return ll, nil
}

// waitLink waits until the interface exists and has a source address.
func (in *instance) waitLink(sr *serialRun) (*net.Interface, bool, error) {
	logged := false
	for {
		info, err := in.env.Links.Link(in.cfg.Interface)
		if err == nil {
			var src netip.Addr
			if src, err = in.source(in.cfg); err == nil {
				if in.primary.IsValid() && in.primary != src {
					in.log.Warn("primary address changed; keeping the first one for this run", "address", src)
				} else {
					in.setPrimary(src)
				}
				ifi := &net.Interface{Index: info.Index, Name: info.Name, HardwareAddr: info.HardwareAddr, MTU: 1500}
				if logged {
					in.log.Info("interface ready", "source", src)
				}
				in.setWaiting("")
				return ifi, info.Up, nil
			}
		}
		if !errors.Is(err, netif.ErrNoLink) && !errors.Is(err, netif.ErrNoAddress) && !errors.Is(err, errTentative) && !errors.Is(err, netif.ErrDADFailed) {
			return nil, false, fmt.Errorf("interface %s: %w", in.cfg.Interface, err)
		}
		sr.handOff() // the rest of a list does not wait for this link
		if !logged {
			in.log.Warn(waitWhat(in.cfg), "reason", err)
			in.setWaiting(waitReason(in.cfg, err))
			logged = true
		}
		if err := in.awaitLinkEvent(); err != nil {
			return nil, false, err
		}
	}
}

// whileWaiting runs what a phase that waits for something else still
// takes: commands (status, a reload) and tracker changes. False: ev is
// neither.
func (in *instance) whileWaiting(ev event) bool {
	switch ev.kind {
	case evCmd:
		ev.cmd()
	case evTracker:
		in.onTracker(ev.tracker)
	default:
		return false
	}
	return true
}

// awaitLinkEvent waits for a link event, or waitRetry, running the
// commands and tracker changes that come meanwhile.
func (in *instance) awaitLinkEvent() error {
	t := time.NewTimer(waitRetry)
	defer t.Stop()
	want := kindSet(evStop, evLink, evCmd, evTracker)
	for {
		ev, signal := in.mb.nextOrWait(want)
		switch {
		case ev.kind == evStop:
			return errQuit
		case ev.kind == evLink:
			return nil
		case in.whileWaiting(ev):
			continue
		}
		select {
		case <-signal:
		case <-t.C:
			return nil
		}
	}
}

func (in *instance) setPrimary(src netip.Addr) {
	in.primary = src
	in.pubMu.Lock()
	in.pub.primary = src
	in.pubMu.Unlock()
}

func (in *instance) open(ifi *net.Interface) error {
	if err := in.openVRRP(ifi); err != nil {
		return err
	}
	if in.routes != nil {
		// BGP: the routers carry the VIPs; nothing to say on the link.
		in.ann, in.linkIndex = &linkAnnouncer{announce: in.routes, stop: func() {}}, ifi.Index
		in.log.Info("joined", "source", in.primary, "mode", mode(in.cfg), "announce", in.cfg.Announce.String())
		return nil
	}
	la, err := in.announcers.join(ifi, in)
	if err != nil {
		in.close()
		return err
	}
	in.ann, in.linkIndex = la, ifi.Index
	in.log.Info("joined", "source", in.primary, "mode", mode(in.cfg))
	return nil
}

func (in *instance) openVRRP(ifi *net.Interface) error {
	s, err := in.sockets.join(ifi, transport.Options{Source: in.primary, Unicast: len(in.cfg.UnicastPeers) > 0}, in)
	if err != nil {
		return err
	}
	in.sock = s
	return nil
}

func mode(ic *config.Instance) string {
	if len(ic.UnicastPeers) > 0 {
		return "unicast"
	}
	return "multicast"
}

func (in *instance) close() {
	in.clearQuiet()
	if in.sock != nil {
		in.sockets.leave(in.sock, in)
		in.sock = nil
	}
	if in.ann != nil && in.routes == nil {
		in.announcers.leave(in.ann, in)
	}
	in.ann = nil
}

// reopenVRRP replaces the VRRP socket after a reload changed the transport
// (unicast and multicast, the source): the machine, its timers and the
// addresses stay as they are, so a Master stays Master.
func (in *instance) reopenVRRP() error {
	in.reopen = false
	in.clearQuiet()
	if in.sock != nil {
		in.sockets.leave(in.sock, in)
		in.sock = nil
	}
	info, err := in.env.Links.Link(in.cfg.Interface)
	if err != nil {
		return fmt.Errorf("reopening the VRRP socket: %w", err)
	}
	ifi := &net.Interface{Index: info.Index, Name: info.Name, HardwareAddr: info.HardwareAddr, MTU: 1500}
	if err := in.openVRRP(ifi); err != nil {
		return fmt.Errorf("reopening the VRRP socket: %w", err)
	}
	in.log.Info("VRRP socket reopened", "source", in.primary, "mode", mode(in.cfg))
	return nil
}

// setWaiting says in status what the instance waits for ("" for nothing).
func (in *instance) setWaiting(what string) {
	in.pubMu.Lock()
	in.pub.waiting = what
	in.pubMu.Unlock()
}

func waitWhat(ic *config.Instance) string {
	if ic.IPv6() {
		return "waiting for the interface and its IPv6 link-local address to leave the tentative state"
	}
	return "waiting for the interface and its IPv4 address"
}

// waitReason is what status says an instance waits for.
func waitReason(ic *config.Instance, err error) string { return waitWhat(ic) + ": " + err.Error() }
