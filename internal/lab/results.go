package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// BenchResult is everything a bench run measured; it is what the JSON file
// holds.
type BenchResult struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Kernel   string    `json:"kernel,omitempty"`
	// Versions maps a daemon kind to what its binary says about itself.
	Versions map[string]string `json:"versions,omitempty"`
	Config   BenchSettings     `json:"config"`
	Groups   []GroupStatus     `json:"groups"`
	Steady   []SteadyResult    `json:"steady"`
	Trials   []TrialResult     `json:"trials"`
}

// BenchSettings echoes the run's settings into the results.
type BenchSettings struct {
	Daemons     []string  `json:"daemons"`
	IntervalsMS []float64 `json:"intervals_ms"`
	Modes       []string  `json:"modes"`
	Trials      int       `json:"trials"`
	SteadyS     float64   `json:"steady_s"`
	ProbeMS     float64   `json:"probe_period_ms"`
	Priorities  []int     `json:"priorities"`
	VRID        int       `json:"vrid"`
	VIP         string    `json:"vip"`
}

// GroupStatus says whether a daemon ran stably at an interval.
type GroupStatus struct {
	Daemon     string  `json:"daemon"`
	IntervalMS float64 `json:"interval_ms"`
	Stable     bool    `json:"stable"`
	// VIPMoves and ForeignAdverts count VIP events and adverts from
	// non-masters during the steady window (both 0 when stable).
	VIPMoves       int    `json:"vip_moves"`
	ForeignAdverts int    `json:"foreign_adverts"`
	Error          string `json:"error,omitempty"`
}

// SteadyResult is the resource use of a healthy group over the steady window.
type SteadyResult struct {
	Daemon     string      `json:"daemon"`
	IntervalMS float64     `json:"interval_ms"`
	WindowS    float64     `json:"window_s"`
	Nodes      []NodeUsage `json:"nodes"`
}

// NodeUsage is one node's daemon use in the steady window.
type NodeUsage struct {
	Node       int     `json:"node"`
	Role       string  `json:"role"`
	CPUSeconds float64 `json:"cpu_seconds"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	Procs      int     `json:"procs"`
}

// WriteJSON writes r, indented, to path.
func (r *BenchResult) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Stat summarises one metric's samples.
type Stat struct {
	N                int
	Median, Min, Max float64
}

func summarize(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{N: len(s), Median: med, Min: s[0], Max: s[len(s)-1]}
}

// Row is one line of the summary table: a metric of a mode at an interval,
// per daemon.
type Row struct {
	Mode       string
	IntervalMS float64
	Metric     string
	Unit       string
	ByDaemon   map[string]Stat
	// Note is shown instead of numbers for daemons that did not run stably.
	Note map[string]string
}

// Ratio is vipd's median over keepalived's, NaN when either is missing or
// not positive (a ratio of differences near zero says nothing).
func (r Row) Ratio() float64 {
	v, okv := r.ByDaemon["vipd"]
	k, okk := r.ByDaemon["keepalived"]
	if !okv || !okk || v.N == 0 || k.N == 0 || k.Median <= 0 || v.Median < 0 {
		return math.NaN()
	}
	return v.Median / k.Median
}

type metricDef struct {
	name, unit string
	modes      []string // empty: every mode
	get        func(TrialResult) (float64, bool)
}

func metricDefs() []metricDef {
	all := func(f func(TrialResult) float64) func(TrialResult) (float64, bool) {
		return func(t TrialResult) (float64, bool) { return f(t), true }
	}
	return []metricDef{
		{"outage", "ms", nil, all(func(t TrialResult) float64 { return t.OutageMS })},
		{"takeover", "ms", nil, all(func(t TrialResult) float64 { return t.TakeoverMS })},
		{"bound", "ms", nil, all(func(t TrialResult) float64 { return t.BoundMS })},
		{"outage - bound", "ms", []string{"cut", "graceful"}, all(func(t TrialResult) float64 { return t.ExcessMS })},
		{"takeover - bound", "ms", nil, all(func(t TrialResult) float64 { return t.TakeoverExcessMS })},
		{"duplicate", "ms", []string{"cut", "graceful"}, all(func(t TrialResult) float64 { return t.DuplicateMS })},
		// Negative when the gratuitous ARP reached the client before the
		// lab read the new owner's address event: kept, it is a measurement.
		{"neigh - takeover", "ms", []string{"kill"}, func(t TrialResult) (float64, bool) {
			return t.NeighAfterTakeoverMS, t.NeighMS >= 0
		}},
		{"2nd owner reported", "trials", []string{"kill"}, func(t TrialResult) (float64, bool) {
			if t.SecondOwnerReported == nil {
				return 0, false
			}
			if *t.SecondOwnerReported {
				return 1, true
			}
			return 0, true
		}},
	}
}

// Rows summarises the trials and steady windows, in the order of the
// settings: interval, then mode, then metric; steady rows last.
func (r *BenchResult) Rows() []Row {
	var rows []Row
	unstable := map[string]string{}
	for _, g := range r.Groups {
		if !g.Stable {
			unstable[fmt.Sprintf("%s/%g", g.Daemon, g.IntervalMS)] = "unstable"
		}
	}
	for _, iv := range r.Config.IntervalsMS {
		for _, mode := range r.Config.Modes {
			for _, md := range metricDefs() {
				if len(md.modes) > 0 && !slices.Contains(md.modes, mode) {
					continue
				}
				row := Row{Mode: mode, IntervalMS: iv, Metric: md.name, Unit: md.unit,
					ByDaemon: map[string]Stat{}, Note: map[string]string{}}
				for _, d := range r.Config.Daemons {
					var xs []float64
					for _, t := range r.Trials {
						if t.Daemon == d && t.IntervalMS == iv && t.Mode == mode && t.Error == "" {
							if v, ok := md.get(t); ok {
								xs = append(xs, v)
							}
						}
					}
					if md.unit == "trials" {
						sum := 0.0
						for _, x := range xs {
							sum += x
						}
						row.ByDaemon[d] = Stat{N: len(xs), Median: sum, Min: sum, Max: sum}
					} else if len(xs) > 0 {
						row.ByDaemon[d] = summarize(xs)
					}
					if n := unstable[fmt.Sprintf("%s/%g", d, iv)]; n != "" {
						row.Note[d] = n
					}
				}
				rows = append(rows, row)
			}
		}
	}
	for _, iv := range r.Config.IntervalsMS {
		cpu := Row{Mode: "steady", IntervalMS: iv, Metric: "cpu per node", Unit: "ms", ByDaemon: map[string]Stat{}}
		rss := Row{Mode: "steady", IntervalMS: iv, Metric: "peak rss per node", Unit: "MiB", ByDaemon: map[string]Stat{}}
		for _, s := range r.Steady {
			if s.IntervalMS != iv {
				continue
			}
			var c, m []float64
			for _, n := range s.Nodes {
				c = append(c, n.CPUSeconds*1000)
				m = append(m, n.PeakRSSMiB)
			}
			cpu.ByDaemon[s.Daemon], rss.ByDaemon[s.Daemon] = summarize(c), summarize(m)
		}
		if len(cpu.ByDaemon) > 0 {
			rows = append(rows, cpu, rss)
		}
	}
	return rows
}

// WriteTable writes the summary table: median [min..max] per daemon and the
// vipd/keepalived ratio of medians.
func (r *BenchResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hdr := []string{"mode", "interval", "metric", "unit"}
	for _, d := range r.Config.Daemons {
		hdr = append(hdr, d+" median [min..max] (n)")
	}
	hdr = append(hdr, "vipd/keepalived")
	fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	for _, row := range r.Rows() {
		cells := []string{row.Mode, fmtInterval(row.IntervalMS), row.Metric, row.Unit}
		for _, d := range r.Config.Daemons {
			s, ok := row.ByDaemon[d]
			switch {
			case row.Note[d] != "" && !ok:
				cells = append(cells, row.Note[d])
			case !ok || s.N == 0:
				cells = append(cells, "-")
			case row.Unit == "trials":
				cells = append(cells, fmt.Sprintf("%g of %d", s.Median, s.N))
			default:
				cells = append(cells, fmt.Sprintf("%s [%s..%s] (%d)", fmtNum(s.Median), fmtNum(s.Min), fmtNum(s.Max), s.N))
			}
		}
		ratio := "-"
		if q := row.Ratio(); !math.IsNaN(q) && row.Unit != "trials" {
			ratio = fmt.Sprintf("%.2f", q)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, ratio), "\t"))
	}
	for _, g := range r.Groups {
		if !g.Stable {
			fmt.Fprintf(tw, "\nnote: %s at %s did not run stably: %s\n", g.Daemon, fmtInterval(g.IntervalMS), g.Error)
		}
	}
	return tw.Flush()
}

func fmtInterval(msf float64) string {
	return time.Duration(msf * float64(time.Millisecond)).String()
}

func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
