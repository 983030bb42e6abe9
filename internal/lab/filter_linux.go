package lab

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// filterChain is the chain every fault rule goes into. Not "fwd" or any
// other nft keyword: the parser would reject it.
const filterChain = "vrrp_faults"

// Filter drops VRRP adverts on the lab's bridge with nftables (this kernel
// has neither netem nor tc actions). Its table lives in the bridge's own
// namespace, so nothing on the host is touched, and it is gone with the
// namespace even after a SIGKILL (CleanStale). ARP and IP are never
// filtered: only IP protocol 112.
type Filter struct {
	lab   *Lab
	table string

	mu     sync.Mutex
	closed bool
}

// NewFilter creates the run's table (bridge family, named after the lab's
// ID) with an empty forward chain. Close, or the lab's Close, removes it.
func (l *Lab) NewFilter(ctx context.Context) (*Filter, error) {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, errors.New("lab: nft is missing: apt-get install nftables")
	}
	f := &Filter{lab: l, table: strings.ReplaceAll(l.id, "-", "_")}
	script := fmt.Sprintf("add table bridge %s\nadd chain bridge %s %s { type filter hook forward priority 0; policy accept; }\n",
		f.table, f.table, filterChain)
	if err := f.nft(ctx, script); err != nil {
		return nil, err
	}
	if !l.track(f, func() { _ = f.close() }) {
		_ = f.close()
		return nil, errors.New("lab: closed")
	}
	return f, nil
}

// Table is the nftables table's name (in the bridge namespace).
func (f *Filter) Table() string { return f.table }

// LossTowards drops percent % of the adverts the bridge forwards to node i,
// each packet drawn on its own: loss per receiver.
func (f *Filter) LossTowards(ctx context.Context, i, percent int) error {
	if percent < 0 || percent > 100 {
		return fmt.Errorf("lab: loss %d%%: want 0..100", percent)
	}
	draw := fmt.Sprintf("numgen random mod 100 < %d ", percent)
	switch percent {
	case 0:
		return nil
	case 100:
		draw = "" // numgen's range ends at 99
	}
	return f.add(ctx, fmt.Sprintf("oifname %q ip protocol %d %scounter drop", f.lab.node(i).port, vrrpProto, draw))
}

// Partition drops every advert between node i and the other nodes and the
// stranger, both ways: a VRRP partition with the LAN intact (ARP and IP
// flow), as a switch filtering multicast makes. The client, a bystander,
// still sees everyone's adverts, so the monitor keeps its view.
func (f *Filter) Partition(ctx context.Context, i int) error {
	var others []string
	for k := 1; k <= f.lab.Nodes(); k++ {
		if k != i {
			others = append(others, strconv.Quote(f.lab.node(k).port))
		}
	}
	if f.lab.stranger != nil {
		others = append(others, strconv.Quote(f.lab.stranger.port))
	}
	if len(others) == 0 {
		return errors.New("lab: a partition needs a second node")
	}
	set := "{ " + strings.Join(others, ", ") + " }"
	port := strconv.Quote(f.lab.node(i).port)
	if err := f.add(ctx, fmt.Sprintf("iifname %s oifname %s ip protocol %d counter drop", port, set, vrrpProto)); err != nil {
		return err
	}
	return f.add(ctx, fmt.Sprintf("iifname %s oifname %s ip protocol %d counter drop", set, port, vrrpProto))
}

// Dropped is the number of packets the current rules dropped.
func (f *Filter) Dropped(ctx context.Context) (int, error) {
	out, err := f.output(ctx, "list", "chain", "bridge", f.table, filterChain)
	if err != nil {
		return 0, err
	}
	return sumCounters(out), nil
}

var counterRE = regexp.MustCompile(`counter packets (\d+)`)

// sumCounters adds up the packet counters of `nft list chain` output.
func sumCounters(listing string) int {
	n := 0
	for _, m := range counterRE.FindAllStringSubmatch(listing, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// Heal removes every rule: the LAN is whole again.
func (f *Filter) Heal(ctx context.Context) error {
	return f.nft(ctx, fmt.Sprintf("flush chain bridge %s %s\n", f.table, filterChain))
}

// Close deletes the table. It is idempotent.
func (f *Filter) Close() error {
	err := f.close()
	f.lab.untrack(f)
	return err
}

func (f *Filter) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	// Not bound to a caller's context: tear-down must run after a Ctrl-C.
	return f.nftLocked(context.Background(), fmt.Sprintf("delete table bridge %s\n", f.table))
}

func (f *Filter) add(ctx context.Context, rule string) error {
	return f.nft(ctx, fmt.Sprintf("add rule bridge %s %s %s\n", f.table, filterChain, rule))
}

func (f *Filter) nft(ctx context.Context, script string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errors.New("lab: filter closed")
	}
	return f.nftLocked(ctx, script)
}

func (f *Filter) nftLocked(ctx context.Context, script string) error {
	cmd := netnsCommand(ctx, f.lab.bridge.name, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lab: nft %q: %w: %s", strings.TrimSpace(script), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (f *Filter) output(ctx context.Context, args ...string) (string, error) {
	out, err := netnsCommand(ctx, f.lab.bridge.name, "nft", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("lab: nft %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
