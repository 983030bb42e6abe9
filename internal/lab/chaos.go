package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// HolderStats is what the address events say about a window.
type HolderStats struct {
	// Acquisitions counts the times a node took the VIP: each is a move of
	// the address (a restore after a manual delete counts too).
	Acquisitions int
	// TwoHolders and NoHolder are the total times two or more, or no, nodes
	// held the VIP; LongestNoHolder is the longest single stretch of none.
	TwoHolders, NoHolder, LongestNoHolder time.Duration
}

// holderStats replays address events over [from, to): the state at from
// is what the events before it left. Events are in time order.
func holderStats(events []Event, nodes int, from, to time.Time) HolderStats {
	held := make([]bool, nodes+1)
	count := 0
	// apply reports whether e changed anything (the kernel repeats itself).
	apply := func(e Event) bool {
		if e.Kind != VIPAdded && e.Kind != VIPRemoved || e.Node < 1 || e.Node > nodes {
			return false
		}
		has := e.Kind == VIPAdded
		if held[e.Node] == has {
			return false
		}
		held[e.Node] = has
		if has {
			count++
		} else {
			count--
		}
		return true
	}
	i := 0
	for ; i < len(events) && events[i].At.Before(from); i++ {
		apply(events[i])
	}
	var st HolderStats
	account := func(a, b time.Time) {
		switch {
		case count >= 2:
			st.TwoHolders += b.Sub(a)
		case count == 0:
			st.NoHolder += b.Sub(a)
		}
	}
	cursor := from
	var noneSince time.Time
	if count == 0 {
		noneSince = from
	}
	for ; i < len(events) && events[i].At.Before(to); i++ {
		e := events[i]
		before := count
		at := e.At
		if at.Before(cursor) {
			at = cursor
		}
		account(cursor, at)
		cursor = at
		if !apply(e) {
			continue
		}
		switch {
		case count > before:
			st.Acquisitions++
			if before == 0 {
				st.LongestNoHolder = max(st.LongestNoHolder, at.Sub(noneSince))
			}
		case count == 0:
			noneSince = at
		}
	}
	account(cursor, to)
	if count == 0 {
		st.LongestNoHolder = max(st.LongestNoHolder, to.Sub(noneSince))
	}
	return st
}

// neighMoves counts the times the client's entry for the VIP changed to a
// different hardware address in [from, to). An entry that fails and comes
// back to the same MAC is not a move; the MAC before from is the baseline.
func neighMoves(events []Event, from, to time.Time) int {
	var last string
	moves := 0
	for _, e := range events {
		if e.Kind != NeighChanged || len(e.MAC) == 0 {
			continue
		}
		if !e.At.Before(to) {
			break
		}
		mac := string(e.MAC)
		if mac == last {
			continue
		}
		if !e.At.Before(from) && last != "" {
			moves++
		}
		last = mac
	}
	return moves
}

// ChaosWindow is what happened in one stretch of a scenario. Times are
// milliseconds.
type ChaosWindow struct {
	// FromMS and ToMS are relative to the start of the fault.
	FromMS float64 `json:"from_ms"`
	ToMS   float64 `json:"to_ms"`
	// AddressMoves: times a node took the VIP. NeighMoves: times the
	// client's neighbour entry for the VIP changed MAC.
	AddressMoves      int     `json:"address_moves"`
	NeighMoves        int     `json:"neigh_moves"`
	TwoHoldersMS      float64 `json:"two_holders_ms"`
	NoHolderMS        float64 `json:"no_holder_ms"`
	LongestNoHolderMS float64 `json:"longest_no_holder_ms"`
	// OutageMS is the client's longest gap between answered probes;
	// LostProbes the probes sent in the window (but its last 100 ms) that
	// were never answered.
	OutageMS   float64 `json:"outage_ms"`
	LostProbes int     `json:"lost_probes"`
	ProbesSent int     `json:"probes_sent"`
	// ProbeStallMS is the longest pause between probes sent: well above the
	// 1 ms period, the machine stalled the lab itself.
	ProbeStallMS float64 `json:"probe_stall_ms"`
}

// ChaosResult is one scenario run against one daemon kind.
type ChaosResult struct {
	Scenario   string  `json:"scenario"`
	Daemon     string  `json:"daemon"`
	IntervalMS float64 `json:"interval_ms"`
	// Master is the node that was master when the fault began.
	Master int `json:"master"`
	// Fault covers the fault itself (from its start until it was undone);
	// Total runs on until the group settled or the settle timeout passed.
	Fault ChaosWindow `json:"fault"`
	Total ChaosWindow `json:"total"`
	// Settled says whether the group settled (one holder, the client on
	// its MAC, nothing moving) before the timeout.
	Settled bool `json:"settled"`
	// At the end: how many nodes hold the VIP, whether the client's entry
	// points at the only holder, how many daemons still run.
	Holders       []int `json:"holders_at_end"`
	OneOwner      bool  `json:"one_owner_at_end"`
	ClientOnOwner bool  `json:"client_on_owner_at_end"`
	DaemonsAlive  int   `json:"daemons_alive"`
	Daemons       int   `json:"daemons"`
	// CPUMS is the daemons' scheduler run time over the whole run (all
	// nodes, restarted processes included), from /proc/PID/task/*/schedstat.
	CPUMS float64 `json:"cpu_ms"`
	// Host is the host's pressure and steal/iowait over the run.
	Host string `json:"host,omitempty"`
	// Notes are what the fault reports about itself (packets dropped, sent).
	Notes []string `json:"notes,omitempty"`
	Error string   `json:"error,omitempty"`
}

// ChaosReport is a chaos run: what chaos.json holds.
type ChaosReport struct {
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`
	Kernel   string            `json:"kernel,omitempty"`
	Versions map[string]string `json:"versions,omitempty"`
	Commit   string            `json:"commit,omitempty"`
	Quick    bool              `json:"quick"`
	Scale    float64           `json:"scale"`
	// Scenarios names and describes what ran, in order.
	Scenarios []ScenarioInfo `json:"scenarios"`
	Results   []ChaosResult  `json:"results"`
}

// ScenarioInfo describes a scenario in the report.
type ScenarioInfo struct {
	Name       string  `json:"name"`
	Summary    string  `json:"summary"`
	IntervalMS float64 `json:"interval_ms"`
}

// WriteJSON writes r, indented, to path.
func (r *ChaosReport) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteTable writes one line per scenario and daemon, daemons of a
// scenario side by side.
func (r *ChaosReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join([]string{"scenario", "interval", "daemon", "vip moves", "client moves",
		"2 holders ms", "0 holders ms", "longest 0 ms", "outage ms", "lost", "one owner", "client on owner", "alive", "cpu ms", "lab stall ms"}, "\t"))
	for _, sc := range r.Scenarios {
		for _, res := range r.Results {
			if res.Scenario != sc.Name {
				continue
			}
			t := res.Total
			cells := []string{sc.Name, fmtInterval(res.IntervalMS), res.Daemon}
			if res.Error != "" && res.Daemons == 0 {
				cells = append(cells, "error: "+firstLine(res.Error))
				fmt.Fprintln(tw, strings.Join(cells, "\t"))
				continue
			}
			cells = append(cells,
				fmt.Sprint(t.AddressMoves), fmt.Sprint(t.NeighMoves),
				fmtNum(t.TwoHoldersMS), fmtNum(t.NoHolderMS), fmtNum(t.LongestNoHolderMS),
				fmtNum(t.OutageMS), fmt.Sprint(t.LostProbes),
				yesNo(res.OneOwner), yesNo(res.ClientOnOwner),
				fmt.Sprintf("%d/%d", res.DaemonsAlive, res.Daemons), fmt.Sprintf("%.0f", res.CPUMS), fmtNum(t.ProbeStallMS))
			if res.Error != "" {
				cells = append(cells, "("+firstLine(res.Error)+")")
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nvip moves: times a node took the VIP; client moves: MAC changes of the client's neighbour entry for the VIP;")
	fmt.Fprintln(w, "times from the fault's start until the group settled (or the settle timeout); cpu: all daemons' scheduler time;")
	fmt.Fprintln(w, "lab stall: the longest pause of the lab's own 1 ms prober (well above 1 ms the machine stalled the lab, and outages include it).")
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 80 {
		l = l[:77] + "..."
	}
	return l
}
