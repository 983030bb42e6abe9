package daemon

import (
	"errors"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/vipd/vipd/netif"
)

// addressHolder keeps an instance's virtual addresses on its interface
// exactly while the instance holds them. Every path that changes them — the
// takeover, the release, a restore after a manual delete, a reload that
// changes the list — goes through reconcile, which is idempotent.
type addressHolder struct {
	links  Links
	ifname string
	label  string
	log    *slog.Logger
	// changed is told after every reconcile (status, held.json).
	changed func(held bool, vips []netip.Prefix)

	want []netip.Prefix
	held bool
	// kept are foreign addresses equal to a VIP, warned about once.
	kept map[netip.Prefix]bool
}

func newAddressHolder(links Links, ifname string, vips []netip.Prefix, log *slog.Logger, changed func(bool, []netip.Prefix)) *addressHolder {
	h := &addressHolder{links: links, ifname: ifname, log: log, changed: changed, want: slices.Clone(vips)}
	// The kernel refuses labels over 15 characters: such a VIP goes
	// unlabelled (and `vipd cleanup` leaves it alone).
	if l := ifname + ":vip"; len(l) <= 15 {
		h.label = l
	}
	return h
}

// take adds every address.
func (h *addressHolder) take() {
	h.held = true
	h.reconcile(nil)
}

// release removes every address. It is also called when nothing is held,
// to clear what an earlier process may have left.
func (h *addressHolder) release() {
	h.held = false
	h.reconcile(nil)
}

// setVIPs applies a reload's address list and returns the addresses that
// are new while held (to be announced).
func (h *addressHolder) setVIPs(vips []netip.Prefix) (added []netip.Prefix) {
	var gone []netip.Prefix
	for _, v := range h.want {
		if !slices.Contains(vips, v) {
			gone = append(gone, v)
		}
	}
	for _, v := range vips {
		if !slices.Contains(h.want, v) && h.held {
			added = append(added, v)
		}
	}
	h.want = slices.Clone(vips)
	h.reconcile(gone)
	return added
}

// restore re-adds an address someone deleted while we hold it; it reports
// whether it did (and so whether to announce it).
func (h *addressHolder) restore(vip netip.Prefix) bool {
	if !h.held || !slices.Contains(h.want, vip) {
		return false
	}
	h.log.Warn("virtual address removed by someone else while master: restoring it", "vip", vip)
	h.reconcile(nil)
	return true
}

// repair re-adds an IPv6 VIP that the kernel marked dadfailed (someone
// else has the address, or added it without vipd's nodad); it reports
// whether it did.
func (h *addressHolder) repair(vip netip.Prefix) bool {
	if !h.held || !slices.Contains(h.want, vip) {
		return false
	}
	h.log.Warn("virtual address failed duplicate address detection: another host may have it; repairing it", "vip", vip)
	h.reconcile(nil)
	return true
}

func (h *addressHolder) reconcile(gone []netip.Prefix) {
	for _, v := range gone {
		h.remove(v)
	}
	for _, v := range h.want {
		if h.held {
			if err := h.links.AddVIP(h.ifname, v, h.label); err != nil {
				h.log.Error("adding virtual address failed", "vip", v, "error", err)
			}
		} else {
			h.remove(v)
		}
	}
	if h.changed != nil {
		h.changed(h.held, h.want)
	}
}

func (h *addressHolder) remove(v netip.Prefix) {
	err := h.links.RemoveVIP(h.ifname, v)
	switch {
	case errors.Is(err, netif.ErrNotOurs):
		// Someone else's address equal to a VIP (an admin's, another
		// label): not ours to remove; said once.
		if !h.kept[v] {
			if h.kept == nil {
				h.kept = map[netip.Prefix]bool{}
			}
			h.kept[v] = true
			h.log.Warn("keeping an address equal to a VIP that vipd did not add", "vip", v, "detail", err)
		}
	case err != nil:
		h.log.Error("removing virtual address failed", "vip", v, "error", err)
	default:
		delete(h.kept, v)
	}
}

// adoptVIPs takes the VIPs already on the interface for vipd's (Options
// .Adopt) and reports whether all were there. Those found are adopted even
// when some are missing, so that the release that follows removes them.
func (in *instance) adoptVIPs() bool {
	all := true
	for _, v := range in.cfg.VIPs {
		found, err := in.env.Links.AdoptVIP(in.holder.ifname, v)
		if err != nil {
			in.log.Warn("not adopting an address equal to a VIP", "vip", v, "error", err)
		}
		all = all && found
	}
	if all {
		in.log.Info("adopting the VIPs found on the interface: starting as Master", "interface", in.holder.ifname, "vips", in.cfg.VIPs)
	} else {
		in.log.Info("not adopting: some VIPs are not on the interface; starting as Backup", "interface", in.holder.ifname)
	}
	return all
}
