package daemon

import (
	"net/netip"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/vrrp"
)

// advertFrames are the adverts an instance last sent, one per destination,
// and what they were built from. A Master sends the same bytes every
// interval until its priority, its configuration (a reload) or its source
// address changes, so they are built then, not encoded and summed again at
// every advert.
type advertFrames struct {
	cfg     *config.Instance
	primary netip.Addr
	prio    uint8
	dsts    []netip.Addr
	frames  [][]byte
	errs    []error // why a destination's advert could not be built
}

// holds: the frames are the adverts cfg, primary and prio make.
func (f *advertFrames) holds(cfg *config.Instance, primary netip.Addr, prio uint8) bool {
	return f.cfg == cfg && f.cfg != nil && f.primary == primary && f.prio == prio
}

// build encodes the adverts of cfg from primary at prio, reusing the room
// the previous ones took.
func (f *advertFrames) build(cfg *config.Instance, primary netip.Addr, prio uint8) {
	f.cfg, f.primary, f.prio = cfg, primary, prio
	addrs := make([]netip.Addr, 0, len(cfg.VIPs))
	for _, v := range cfg.VIPs {
		addrs = append(addrs, v.Addr())
	}
	adv := vrrp.Advertisement{Version: cfg.Version, VRID: cfg.VRID, Priority: prio, Interval: cfg.AdvertInterval,
		Checksum: cfg.Checksum, Addresses: addrs, Auth: advertAuth(cfg)}
	f.dsts = append(f.dsts[:0], advertDestinations(cfg)...)
	f.frames = f.frames[:min(len(f.frames), len(f.dsts))]
	for len(f.frames) < len(f.dsts) {
		f.frames = append(f.frames, nil)
	}
	f.errs = f.errs[:0]
	for i, dst := range f.dsts {
		var err error
		f.frames[i], err = adv.Append(f.frames[i][:0], primary, dst)
		f.errs = append(f.errs, err)
	}
}

// advertDestinations is where cfg's adverts go: its unicast peers, or the
// VRRP group of its family.
func advertDestinations(cfg *config.Instance) []netip.Addr {
	switch {
	case len(cfg.UnicastPeers) > 0:
		return cfg.UnicastPeers
	case cfg.IPv6():
		return []netip.Addr{vrrp.GroupIPv6}
	}
	return []netip.Addr{vrrp.GroupIPv4}
}

// sendAdvert sends the instance's advert at prio to each destination.
func (in *instance) sendAdvert(prio uint8) {
	if in.sock == nil {
		return
	}
	f := &in.advert
	if !f.holds(in.cfg, in.primary, prio) {
		f.build(in.cfg, in.primary, prio)
	}
	for i, dst := range f.dsts {
		err := f.errs[i]
		if err == nil {
			err = in.sock.WriteTo(f.frames[i], dst)
		}
		if err != nil {
			in.log.Warn("sending advert failed", "destination", dst, "error", err)
			continue
		}
		in.counters.advertsSent.Add(1)
	}
	in.pubMu.Lock()
	in.pub.lastSent = in.env.Now()
	in.pubMu.Unlock()
}
