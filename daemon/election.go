package daemon

import (
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/vipd/vipd/announce"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/vrrp"
)

// machineConfig is the election's view of ic.
func (in *instance) machineConfig(ic *config.Instance) vrrp.Config {
	cfg := vrrp.Config{
		Interface:           ic.Interface,
		VRID:                ic.VRID,
		Priority:            in.effectivePriority(),
		AdvertInterval:      ic.AdvertInterval,
		Preempt:             ic.Preempt,
		PreemptDelay:        ic.PreemptDelay,
		Primary:             in.primary,
		SplitBrainRecovery:  ic.SplitBrainRecovery,
		TakeoverGrace:       takeoverGrace(ic.AdvertInterval),
		PreemptGrace:        preemptGrace(ic.AdvertInterval),
		Peers:               ic.UnicastPeers,
		UnicastMinTTL:       ic.UnicastMinTTL,
		UnicastMaxTTL:       ic.UnicastMaxTTL,
		TrustUnknownMasters: ic.TrustUnknownMasters,
		MasterDownAdverts:   ic.MasterDownAdverts,
		Follower:            ic.Follow != "",
		Version:             ic.Version,
		AcceptOtherVersion:  ic.AcceptOtherVersion,
		Auth:                advertAuth(ic),
		AddressOwner:        ic.AddressOwner,
	}
	for _, v := range ic.VIPs {
		cfg.Addresses = append(cfg.Addresses, v.Addr())
	}
	return cfg
}

// advertAuth is the VRRPv2 authentication ic sends and requires; config
// has checked the password's length.
func advertAuth(ic *config.Instance) vrrp.Auth {
	if ic.AuthPass == "" {
		return vrrp.Auth{}
	}
	a, _ := vrrp.PasswordAuth(ic.AuthPass)
	return a
}

// policyConfig is the announcement policy's view of ic, probing every
// probe (probeEveryOn; zero: at a takeover and while standing down only);
// without a claim monitor there is nothing to probe for.
func policyConfig(ic *config.Instance, monitor bool, probe time.Duration) announce.Config {
	cfg := announce.Config{
		Repeat: ic.GARP.Repeat, Interval: ic.GARP.Interval, Refresh: ic.GARP.Refresh,
		ClaimGrace: min(ic.AdvertInterval, conflictGrace),
	}
	if ic.Announce.BGPMode() {
		// One announcement is a route; the graceful-shutdown drain is
		// how long a handover keeps it after the successor's advert.
		cfg.Repeat, cfg.Refresh, cfg.SuccessorWait = 1, 0, max(ic.BGP.GracefulShutdownTime, announce.SuccessorAnnounceWait)
	}
	if monitor {
		cfg.Probe, cfg.ProbeEvery = true, probe
	}
	return cfg
}

// probeEveryOn is how often ic's Master probes for a second owner of each
// VIP: every garp.probe (zero: never routinely), and less often when the
// interface's instances, each at its own garp.probe, would send more than
// probesPerSecond probes a second, so that one interface broadcasts at
// most about that many however many groups it has. Each probe is a
// broadcast every host of the segment processes; keepalived sends none. A
// foreign claim (a gratuitous ARP) is still heard at once, and every
// takeover probes at once (the Master it replaced may have left the
// address behind): only a silent second owner that appears later waits
// for its VIP's turn.
func probeEveryOn(cfg *config.Config, ic *config.Instance) time.Duration {
	if ic.GARP.Probe <= 0 {
		return 0
	}
	var perSecond float64
	for _, other := range cfg.Instances {
		if other.Interface == ic.Interface && !other.Announce.BGPMode() && other.GARP.Probe > 0 {
			perSecond += float64(len(other.VIPs)) * float64(time.Second) / float64(other.GARP.Probe)
		}
	}
	rounds := max(1, int(math.Ceil(perSecond/probesPerSecond-1e-9)))
	return max(ic.GARP.Probe, probeEvery*time.Duration(rounds))
}

const (
	// probeEvery is the shortest period of a Master's routine probes, and
	// probesPerSecond how many an interface sends at most (probeEveryOn).
	// Four, not sixteen: on a bridge a probe costs its sender as much as an
	// advert (every receiver's kernel runs on the sender's time), and
	// sixteen groups' Master cost 75.8 and 69.0 ms/min with sixteen, 56.6
	// with four.
	probeEvery      = time.Second
	probesPerSecond = 4
	// conflictGrace is how long a claim waits for an advert that explains it.
	conflictGrace = 20 * time.Millisecond
)

// exec publishes the machine's state for readers on other goroutines, then
// carries out its actions in order. The machine has moved before it returns
// actions and does not move while they run, so one publication, first,
// serves status and the transition hooks alike.
func (in *instance) exec(actions []vrrp.Action) {
	in.publish()
	for _, a := range actions {
		switch a.Kind {
		case vrrp.ActSendAdvert:
			in.sendAdvert(a.Priority)
		case vrrp.ActTakeAddresses:
			in.yielding = false
			if !in.holder.held {
				in.tookAt = in.env.Now()
			}
			in.holder.take()
			in.runPolicy(in.policy.TookOver(in.env.Now(), nil))
		case vrrp.ActReleaseAddresses:
			if in.handover && in.holder.held && !in.policy.HandingOver() {
				in.startHandover()
				continue
			}
			if a.Peer.IsValid() && in.holder.held && !in.policy.HandingOver() && in.canYield() {
				in.startYield(a.Peer)
				continue
			}
			if in.policy.HandingOver() {
				continue // the handover removes them
			}
			in.policy.Released()
			if in.routes != nil {
				// The route goes before the address: no router may send
				// traffic for a VIP this host no longer has.
				in.routes.withdraw("no longer Master")
			}
			in.holder.release()
			in.armPolicy()
		case vrrp.ActAnnounce:
			// Only a split brain settling in our favour asks for it.
			var from netip.Addr
			if in.rx != nil {
				from = in.rx.src
			}
			in.log.Info("two Masters: the other has a lower priority and yields; announcing ours again", "other", from)
			in.runPolicy(in.policy.Reannounce(in.env.Now(), nil))
		case vrrp.ActArmTimer:
			in.armTimer(a.Timer, a.After)
			in.rearm(in.env.Now())
		case vrrp.ActStopTimer:
			in.dueAt[a.Timer] = time.Time{}
			in.rearm(in.env.Now())
		case vrrp.ActTransition:
			in.transition(a.Transition)
		case vrrp.ActAddressMismatch:
			in.addressMismatch(a.Peer)
		case vrrp.ActForeignMaster:
			in.log.Warn("another host advertises as Master on this follower's VRID; this host follows its leader and keeps the addresses",
				"peer", a.Peer, "leader", in.follow)
			in.dropMu.Lock()
			in.collision = fmt.Sprintf("follower: %v advertises as Master on VRID %d too; the addresses follow the leader %q", a.Peer, in.id.vrid, in.follow)
			in.collisionKey = 0
			in.collisionAt = in.env.Now()
			in.dropMu.Unlock()
		case vrrp.ActDownTimerMismatch:
			in.log.Warn("a peer seems to use another master_down_adverts than ours: all hosts of a group should agree", "peer", a.Peer, "detail", a.Detail)
		}
	}
}

// armTimer sets the deadline of the machine's timer t, after from now: from
// the advert's arrival when it was set aside (quiet.go), and a Master's
// advert at the instants the socket's Masters share (grid.go).
func (in *instance) armTimer(t vrrp.Timer, after time.Duration) {
	now := in.clockNow()
	if t == vrrp.TimerAdvert && in.sock != nil && in.m.AdvertMayBeEarly() {
		in.dueAt[t] = in.sock.grid.Load().due(now, after, in.cfg.AdvertInterval, in.id.vrid)
		return
	}
	in.dueAt[t] = now.Add(after)
}

// heldChanged is the holder's report: publish it and rewrite held.json.
func (in *instance) heldChanged(held bool, vips []netip.Prefix) {
	in.pubMu.Lock()
	in.pub.held, in.pub.vips = held, vips
	in.pubMu.Unlock()
	if in.hooks.held != nil {
		in.hooks.held()
	}
}

func (in *instance) transition(tr vrrp.Transition) {
	if in.routes != nil && !in.anycastMode {
		// In the BGP election mode the state says what the routers hear.
		switch {
		case tr.To == vrrp.StateMaster:
			tr.Cause += "; route announced"
		case tr.From == vrrp.StateMaster:
			tr.Cause += "; route withdrawn"
		}
	}
	in.counters.transitions.Add(1)
	in.pubMu.Lock()
	in.pub.last = tr
	in.pubMu.Unlock()
	in.log.Info("state changed", "from", tr.From.String(), "to", tr.To.String(), "reason", tr.Reason.String(), "cause", tr.Cause)
	if in.drained && tr.To == vrrp.StateMaster {
		// Said loudly: the operator asked for the opposite.
		in.log.Error("drained, but no other node took over within Master_Down_Interval: holding the address, because an address with no owner is worse",
			"vips", in.cfg.VIPs)
	}
	if in.hooks.transition != nil {
		in.hooks.transition(in.id.name, tr, in.late)
	}
	in.runHook(tr)
}

// addressMismatch warns about an advert the election followed although its
// address list differs from ours: the Master changed its VIPs first (a
// rolling change), or an address owner speaks. Taking over would put the
// old VIPs on two hosts, so we follow it, loudly.
func (in *instance) addressMismatch(peer netip.Addr) {
	var theirs []netip.Addr
	if in.rx != nil {
		theirs = in.rx.adv.Addresses
	}
	in.log.Warn("the Master advertises other addresses than ours: following it (a rolling change of the VIP list?); make the lists agree",
		"master", peer, "advert_addresses", theirs, "our_vips", in.cfg.VIPs)
	in.dropMu.Lock()
	in.collision = fmt.Sprintf("address list mismatch: the Master %v advertises %v, this host has %v", peer, theirs, in.cfg.VIPs)
	in.collisionKey = 0
	in.collisionAt = in.env.Now()
	in.dropMu.Unlock()
}

// receive hands an advert to the election and carries out what it says.
func (in *instance) receive(p *received, out []vrrp.Action) {
	if p.deferred {
		if p.at.Before(in.lastEventAt) {
			// Something later was decided first; this advert says nothing
			// newer than what was (only a race of the queues gets here).
			in.counters.advertsReceived.Add(1)
			return
		}
		in.deferredAt = p.at
		defer func() { in.deferredAt = time.Time{} }()
	}
	in.lastEventAt = in.clockNow()
	out, err := in.m.ReceiveAdvert(p.src, p.ttl, &p.adv, out)
	if err != nil {
		in.drop(err, p.src, &p.adv)
		return
	}
	in.counters.advertsReceived.Add(1)
	in.noteArrival(p.src, in.lastEventAt)
	in.notePeerForm(p.src, &p.adv)
	if p.adv.Priority > 0 {
		in.successorHeard(p.src)
	}
	in.rx = p
	in.exec(out)
	in.rx = nil
	in.updateQuiet(p, out)
}

// maxChecksumPeers bounds the peers whose checksum form status shows.
const maxChecksumPeers = 16

// peerFormV2 is what status says of a peer whose adverts are VRRPv2: its
// checksum has one form, and which version a peer still speaks is what
// matters while a group moves to VRRPv3.
const peerFormV2 = "vrrpv2"

// notePeerForm records which checksum form (RFC 5798 with the IPv4
// pseudo-header, or RFC 9568 without) a peer uses, or that it speaks
// VRRPv2, for status.
func (in *instance) notePeerForm(src netip.Addr, adv *vrrp.Advertisement) {
	form := adv.Checksum.String()
	if adv.Version == vrrp.Version2 {
		form = peerFormV2
	}
	in.pubMu.Lock()
	defer in.pubMu.Unlock()
	for i, pf := range in.pub.checksums {
		if pf.addr == src {
			in.pub.checksums[i].form = form
			return
		}
	}
	if len(in.pub.checksums) >= maxChecksumPeers {
		in.pub.checksums = in.pub.checksums[:0]
	}
	in.pub.checksums = append(in.pub.checksums, peerForm{src, form})
}

// peerForm is a peer's checksum form (notePeerForm). A slice of them, not
// a map: a group hears one or two peers, and a map of one cost about 390
// bytes a group where the slice costs 48, and a lookup at every advert.
type peerForm struct {
	addr netip.Addr
	form string
}
