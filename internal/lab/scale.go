package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// MaxGroups is how many groups one interface can carry: every VRID.
const MaxGroups = 255

// ScaleResult is what a scale run measured (issue 16); it is what
// scale.json holds.
type ScaleResult struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Commit   string    `json:"commit,omitempty"`
	Kernel   string    `json:"kernel,omitempty"`
	CPUs     int       `json:"cpus"`
	// Versions maps a daemon kind to what its binary says about itself.
	Versions map[string]string `json:"versions,omitempty"`
	Config   ScaleSettings     `json:"config"`
	Windows  []ScaleWindow     `json:"windows"`
	// Failovers are link cuts of the master of the largest group count.
	Failovers []FailoverResult `json:"failovers"`
	// Trials are single-group link cuts for takeover − bound, run here or
	// taken from a bench run (Config.TakeoverSource says which).
	Trials []TrialResult `json:"trials"`
	// Notes say what was skipped and why (perf, a daemon that did not settle).
	Notes []string `json:"notes,omitempty"`
}

// ScaleSettings echoes the run's settings into the results.
type ScaleSettings struct {
	Daemons          []string  `json:"daemons"`
	IntervalsMS      []float64 `json:"intervals_ms"`
	Groups           []int     `json:"groups"`
	GroupsIntervalMS float64   `json:"groups_interval_ms"`
	WindowS          float64   `json:"window_s"`
	Rounds           int       `json:"rounds,omitempty"`
	ARPRate          int       `json:"arp_rate"`
	Trials           int       `json:"trials"`
	TakeoverSource   string    `json:"takeover_source"`
	Priorities       []int     `json:"priorities"`
	// VipdGARPProbe is vipd's garp.probe when not its default.
	VipdGARPProbe string `json:"vipd_garp_probe,omitempty"`
}

// ScaleWindow is the resource use of every node's daemon over one steady
// window of a healthy lab.
type ScaleWindow struct {
	Daemon     string  `json:"daemon"`
	IntervalMS float64 `json:"interval_ms"`
	Groups     int     `json:"groups"`
	// Round numbers the one-group labs of a configuration, from 1 (0: the
	// N-groups labs, measured once).
	Round int `json:"round,omitempty"`
	// ARPRate is the background ARP load asked for (requests a second, 0:
	// quiet); ARPSent is what the stranger managed to send.
	ARPRate int         `json:"arp_rate"`
	ARPSent int         `json:"arp_sent,omitempty"`
	WindowS float64     `json:"window_s"`
	Nodes   []ScaleNode `json:"nodes"`
	// Stable is false when a VIP moved or a backup advertised meanwhile.
	Stable bool   `json:"stable"`
	Error  string `json:"error,omitempty"`
}

// ScaleNode is one node's daemon over a window, summed over its processes
// (keepalived: the parent and its VRRP child).
type ScaleNode struct {
	Node  int    `json:"node"`
	Role  string `json:"role"`
	Procs int    `json:"procs"`
	// CPUMS is scheduler run time (schedstat, ns resolution) over the
	// window; TickCPUMS the same from utime+stime (10 ms ticks, but
	// counting threads that exited) as a cross-check.
	CPUMS     float64 `json:"cpu_ms"`
	TickCPUMS float64 `json:"tick_cpu_ms"`
	// RSSMiB is VmRSS at the end of the window, PeakRSSMiB VmHWM.
	RSSMiB     float64 `json:"rss_mib"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// AnonMiB is RssAnon: the private part of RSS, without the file pages
	// of the binary and libraries that RSS also counts (shared and
	// reclaimable; with large page-cache folios the kernel maps more of
	// a file than is touched).
	AnonMiB float64 `json:"anon_mib"`
	// Runs is how often a thread was put on a CPU (schedstat's third
	// field): the wake-ups. Voluntary and Involuntary are context switches.
	Runs        int64 `json:"runs"`
	Voluntary   int64 `json:"voluntary_switches"`
	Involuntary int64 `json:"involuntary_switches"`
	// PerfSwitches and PerfCPUMS come from perf stat when it could count.
	PerfSwitches *float64 `json:"perf_context_switches,omitempty"`
	PerfCPUMS    *float64 `json:"perf_cpu_clock_ms,omitempty"`
}

// FailoverResult is one link cut of the master of a lab with Groups groups.
type FailoverResult struct {
	Daemon     string  `json:"daemon"`
	IntervalMS float64 `json:"interval_ms"`
	Groups     int     `json:"groups"`
	OldMaster  int     `json:"old_master"`
	// BoundMS is the new holder's Master_Down_Interval (RFC 5798 §6.1).
	BoundMS float64 `json:"bound_ms"`
	// TakenOver counts groups whose VIP reached another node.
	TakenOver int `json:"taken_over"`
	// ExcessMS has each group's takeover minus its bound: from the old
	// master's last advert of that group to its VIP on the new holder, minus
	// BoundMS. TakeoverMS[k] is group k's cut → VIP on its new holder (-1:
	// never), in the order of ScaleGroups; LastMS the largest of them.
	ExcessMS   []float64 `json:"excess_ms"`
	TakeoverMS []float64 `json:"takeover_ms"`
	LastMS     float64   `json:"last_ms"`
	// AdvertExcessMS is the same from each group's first advert of its new
	// master (both daemons advertise at once on becoming Master), stamped
	// by the client's kernel: the election's own lateness, free of the
	// lab's in reading address events.
	AdvertExcessMS []float64 `json:"advert_excess_ms"`
	Error          string    `json:"error,omitempty"`
}

// WriteJSON writes r, indented, to path.
func (r *ScaleResult) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// groupTakeover is what a failover saw of one group.
type groupTakeover struct {
	VRID int
	// LastAdvert is the old master's last advert of the group before the
	// cut; TakenAt when its VIP appeared on another node (zero: never);
	// Bound that node's Master_Down_Interval.
	LastAdvert, TakenAt time.Time
	Bound               time.Duration
}

// takeoverExcess is each group's takeover over the RFC bound: the new
// holder's Master_Down_Interval runs from the last advert it heard, so the
// excess is TakenAt − LastAdvert − Bound. Groups that were never taken
// over, or whose last advert is unknown, have no excess; the count of the
// taken ones is returned beside.
func takeoverExcess(gs []groupTakeover) (excessMS []float64, taken int) {
	for _, g := range gs {
		if g.TakenAt.IsZero() {
			continue
		}
		taken++
		if g.LastAdvert.IsZero() {
			continue
		}
		excessMS = append(excessMS, ms(g.TakenAt.Sub(g.LastAdvert)-g.Bound))
	}
	return excessMS, taken
}

// spread is the mean, min and max of xs (N = 0 when empty).
type spread struct {
	N              int
	Mean, Min, Max float64
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := spread{N: len(xs), Min: math.Inf(1), Max: math.Inf(-1)}
	sum := 0.0
	for _, x := range xs {
		sum += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean = sum / float64(len(xs))
	return s
}

// perMinute scales a count over windowS seconds to a minute.
func perMinute(x, windowS float64) float64 {
	if windowS <= 0 {
		return math.NaN()
	}
	return x * 60 / windowS
}

// scaleRow is one line of the scale table.
type scaleRow struct {
	what, unit string
	cells      map[string]string
	// vipd and keepalived are the values the ratio compares (NaN: none).
	vipd, keepalived float64
	// ratio, if set, replaces the vipd/keepalived ratio.
	ratio string
}

func (r scaleRow) ratioText() string {
	if r.ratio != "" {
		return r.ratio
	}
	if math.IsNaN(r.vipd) || math.IsNaN(r.keepalived) || r.keepalived <= 0 || r.vipd < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.vipd/r.keepalived)
}

// window is the first round's window of a configuration: the lab the ARP
// load and the wake-up counts were measured in.
func (r *ScaleResult) window(daemon string, ivMS float64, groups, arp int) (ScaleWindow, bool) {
	for _, w := range r.windows(daemon, ivMS, groups, arp) {
		if w.Round <= 1 {
			return w, true
		}
	}
	return ScaleWindow{}, false
}

// windows are every round's windows of a configuration, in the order
// measured.
func (r *ScaleResult) windows(daemon string, ivMS float64, groups, arp int) []ScaleWindow {
	var ws []ScaleWindow
	for _, w := range r.Windows {
		if w.Daemon == daemon && w.IntervalMS == ivMS && w.Groups == groups && w.ARPRate == arp {
			ws = append(ws, w)
		}
	}
	return ws
}

// nodeMetric is a per-node figure of a window, already scaled.
type nodeMetric func(w ScaleWindow, n ScaleNode) (float64, bool)

func cpuPerMin(w ScaleWindow, n ScaleNode) (float64, bool) {
	return perMinute(n.CPUMS, w.WindowS), true
}
func rssMiB(_ ScaleWindow, n ScaleNode) (float64, bool) { return n.RSSMiB, true }

func anonMiB(_ ScaleWindow, n ScaleNode) (float64, bool) { return n.AnonMiB, n.AnonMiB > 0 }
func runsPerMin(w ScaleWindow, n ScaleNode) (float64, bool) {
	return perMinute(float64(n.Runs), w.WindowS), true
}

func voluntaryPerMin(w ScaleWindow, n ScaleNode) (float64, bool) {
	return perMinute(float64(n.Voluntary), w.WindowS), true
}

func perfSwitchesPerMin(w ScaleWindow, n ScaleNode) (float64, bool) {
	if n.PerfSwitches == nil {
		return 0, false
	}
	return perMinute(*n.PerfSwitches, w.WindowS), true
}

// windowRow renders one metric of the windows (daemon, interval, groups,
// arp) as "mean [min..max]" over the nodes of every round: the mean of the
// rounds' means, as each round has the same nodes.
func (r *ScaleResult) windowRow(what, unit string, ivMS float64, groups, arp int, m nodeMetric) (scaleRow, bool) {
	row := scaleRow{what: what, unit: unit, cells: map[string]string{}, vipd: math.NaN(), keepalived: math.NaN()}
	found := false
	for _, d := range r.Config.Daemons {
		ws := r.windows(d, ivMS, groups, arp)
		if len(ws) == 0 {
			continue
		}
		var xs []float64
		failed, stable := true, true // failed: every round did
		for _, w := range ws {
			vs := nodeValues(w, m)
			xs = append(xs, vs...)
			failed = failed && w.Error != "" && len(vs) == 0
			stable = stable && (w.Stable || len(vs) == 0)
		}
		s := spreadOf(xs)
		switch {
		case failed && s.N == 0:
			row.cells[d] = "failed"
		case s.N == 0:
			continue
		default:
			row.cells[d] = fmt.Sprintf("%s [%s..%s]", fmtNum(s.Mean), fmtNum(s.Min), fmtNum(s.Max))
			if !stable {
				row.cells[d] += " unstable"
			}
			switch d {
			case Vipd.String():
				row.vipd = s.Mean
			case Keepalived.String():
				row.keepalived = s.Mean
			}
		}
		found = true
	}
	return row, found
}

// roundsRow lists a metric's mean over the nodes round by round, and the
// ratio of each round's pair of labs; none when no configuration was
// measured more than once.
func (r *ScaleResult) roundsRow(what, unit string, ivMS float64, groups, arp int, m nodeMetric) (scaleRow, bool) {
	row := scaleRow{what: what, unit: unit, cells: map[string]string{}}
	means := map[string]map[int]float64{}
	rounds := 0
	for _, d := range r.Config.Daemons {
		means[d] = map[int]float64{}
		var texts []string
		for _, w := range r.windows(d, ivMS, groups, arp) {
			rounds = max(rounds, w.Round)
			s := spreadOf(nodeValues(w, m))
			if s.N == 0 {
				texts = append(texts, "failed")
				continue
			}
			means[d][w.Round] = s.Mean
			texts = append(texts, fmtNum(s.Mean))
		}
		if len(texts) > 0 {
			row.cells[d] = strings.Join(texts, " / ")
		}
	}
	if rounds < 2 {
		return row, false
	}
	var ratios []string
	for k := 1; k <= rounds; k++ {
		v, okv := means[Vipd.String()][k]
		ka, okk := means[Keepalived.String()][k]
		if !okv || !okk || ka <= 0 {
			ratios = append(ratios, "-")
			continue
		}
		ratios = append(ratios, fmt.Sprintf("%.2f", v/ka))
	}
	row.ratio = strings.Join(ratios, " / ")
	return row, true
}

func groupsText(n int) string {
	if n == 1 {
		return "1 group"
	}
	return fmt.Sprintf("%d groups", n)
}

// rows builds the table in the order of the settings: one group per
// interval, N groups, ARP load, failover, takeover, wake-ups.
func (r *ScaleResult) rows() []scaleRow {
	var rows []scaleRow
	add := func(row scaleRow, ok bool) {
		if ok {
			rows = append(rows, row)
		}
	}
	for _, iv := range r.Config.IntervalsMS {
		at := fmt.Sprintf("1 group @%s", fmtInterval(iv))
		add(r.windowRow("cpu per node, "+at, "ms/min", iv, 1, 0, cpuPerMin))
		add(r.roundsRow("  by round (labs built anew)", "ms/min", iv, 1, 0, cpuPerMin))
		add(r.windowRow("rss per node, "+at, "MiB", iv, 1, 0, rssMiB))
		add(r.windowRow("  of it private (RssAnon)", "MiB", iv, 1, 0, anonMiB))
	}
	giv := r.Config.GroupsIntervalMS
	for _, n := range r.Config.Groups {
		if n == 1 && slices.Contains(r.Config.IntervalsMS, giv) {
			continue // the one-group row above
		}
		at := fmt.Sprintf("%s @%s", groupsText(n), fmtInterval(giv))
		add(r.windowRow("cpu per node, "+at, "ms/min", giv, n, 0, cpuPerMin))
		add(r.windowRow("rss per node, "+at, "MiB", giv, n, 0, rssMiB))
		add(r.windowRow("  of it private (RssAnon)", "MiB", giv, n, 0, anonMiB))
	}
	if rate := r.Config.ARPRate; rate > 0 {
		at := fmt.Sprintf("1 group @%s, ARP %d/s", fmtInterval(giv), rate)
		add(r.windowRow("cpu per node, "+at, "ms/min", giv, 1, rate, cpuPerMin))
		load := scaleRow{what: "  ARP load / quiet", unit: "x", cells: map[string]string{}, ratio: "-"}
		seen := false
		for _, d := range r.Config.Daemons {
			q, okq := r.window(d, giv, 1, 0)
			l, okl := r.window(d, giv, 1, rate)
			if !okq || !okl {
				continue
			}
			qs, ls := spreadOf(nodeValues(q, cpuPerMin)), spreadOf(nodeValues(l, cpuPerMin))
			if qs.N == 0 || ls.N == 0 || qs.Mean <= 0 {
				continue
			}
			load.cells[d] = fmt.Sprintf("%.2f", ls.Mean/qs.Mean)
			seen = true
		}
		add(load, seen)
	}
	rows = append(rows, r.failoverRows()...)
	for _, iv := range r.Config.IntervalsMS {
		row := scaleRow{what: fmt.Sprintf("takeover - bound (cut), 1 group @%s", fmtInterval(iv)), unit: "ms",
			cells: map[string]string{}, vipd: math.NaN(), keepalived: math.NaN()}
		seen := false
		for _, d := range r.Config.Daemons {
			var xs []float64
			for _, t := range r.Trials {
				if t.Daemon == d && t.IntervalMS == iv && t.Mode == Cut.String() && t.Error == "" {
					xs = append(xs, t.TakeoverExcessMS)
				}
			}
			if len(xs) == 0 {
				continue
			}
			s := summarize(xs)
			row.cells[d] = fmt.Sprintf("%s [%s..%s] (%d)", fmtNum(s.Median), fmtNum(s.Min), fmtNum(s.Max), s.N)
			switch d {
			case Vipd.String():
				row.vipd = s.Median
			case Keepalived.String():
				row.keepalived = s.Median
			}
			seen = true
		}
		add(row, seen)
	}
	at := fmt.Sprintf("1 group @%s", fmtInterval(giv))
	add(r.windowRow("wake-ups per node (schedstat runs), "+at, "/min", giv, 1, 0, runsPerMin))
	add(r.windowRow("voluntary switches per node (/proc status), "+at, "/min", giv, 1, 0, voluntaryPerMin))
	add(r.windowRow("context switches per node (perf stat), "+at, "/min", giv, 1, 0, perfSwitchesPerMin))
	return rows
}

func nodeValues(w ScaleWindow, m nodeMetric) []float64 {
	var xs []float64
	for _, n := range w.Nodes {
		if v, ok := m(w, n); ok {
			xs = append(xs, v)
		}
	}
	return xs
}

func (r *ScaleResult) failoverRows() []scaleRow {
	var rows []scaleRow
	type key struct {
		groups int
		iv     float64
	}
	var keys []key
	for _, f := range r.Failovers {
		if k := (key{f.Groups, f.IntervalMS}); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		row := scaleRow{what: fmt.Sprintf("failover of %s @%s (cut): takeover - MDI min/median/max", groupsText(k.groups), fmtInterval(k.iv)),
			unit: "ms", cells: map[string]string{}, vipd: math.NaN(), keepalived: math.NaN()}
		adv := scaleRow{what: "  new master's first advert - MDI min/median/max", unit: "ms", cells: map[string]string{}, ratio: "-"}
		last := scaleRow{what: "  cut -> last VIP on its new holder", unit: "ms", cells: map[string]string{}, vipd: math.NaN(), keepalived: math.NaN()}
		for _, f := range r.Failovers {
			if f.Groups != k.groups || f.IntervalMS != k.iv {
				continue
			}
			s := summarize(f.ExcessMS)
			cell := fmt.Sprintf("%s / %s / %s (%d of %d)", fmtNum(s.Min), fmtNum(s.Median), fmtNum(s.Max), f.TakenOver, f.Groups)
			if s.N == 0 {
				cell = fmt.Sprintf("none (%d of %d)", f.TakenOver, f.Groups)
			}
			if f.Error != "" {
				cell += " FAILED"
			}
			row.cells[f.Daemon] = cell
			if a := summarize(f.AdvertExcessMS); a.N > 0 {
				adv.cells[f.Daemon] = fmt.Sprintf("%s / %s / %s (%d)", fmtNum(a.Min), fmtNum(a.Median), fmtNum(a.Max), a.N)
			}
			if f.TakenOver > 0 {
				last.cells[f.Daemon] = fmtNum(f.LastMS)
			}
			if s.N > 0 {
				switch f.Daemon {
				case Vipd.String():
					row.vipd, last.vipd = s.Median, f.LastMS
				case Keepalived.String():
					row.keepalived, last.keepalived = s.Median, f.LastMS
				}
			}
		}
		rows = append(rows, row)
		if len(adv.cells) > 0 {
			rows = append(rows, adv)
		}
		rows = append(rows, last)
	}
	return rows
}

// WriteTable writes the scale table: per daemon the mean over the nodes
// [min..max] (failover: min / median / max over the groups; takeover:
// median [min..max] (trials)), and the vipd/keepalived ratio.
func (r *ScaleResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hdr := []string{"what", "unit"}
	hdr = append(hdr, r.Config.Daemons...)
	hdr = append(hdr, "vipd/keepalived")
	fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	for _, row := range r.rows() {
		cells := []string{row.what, row.unit}
		for _, d := range r.Config.Daemons {
			c := row.cells[d]
			if c == "" {
				c = "-"
			}
			cells = append(cells, c)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, row.ratioText()), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, win := range r.Windows {
		if win.Error == "" {
			continue
		}
		load := ""
		if win.ARPRate > 0 {
			load = fmt.Sprintf(", ARP %d/s", win.ARPRate)
		}
		fmt.Fprintf(w, "note: %s, %s @%s%s: %s\n", win.Daemon, groupsText(win.Groups), fmtInterval(win.IntervalMS), load, win.Error)
	}
	for _, f := range r.Failovers {
		if f.Error != "" {
			fmt.Fprintf(w, "note: %s failover of %s: %s\n", f.Daemon, groupsText(f.Groups), f.Error)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// ScaleGroups are the n groups of a scale lab, all on eth0 and configured
// alike but for VRID and VIP: the first is base itself (VRID 51 and the
// lab's VIP, so the lab's Monitor follows it); the others take the
// remaining VRIDs from 1 upwards and one VIP each from 203.0.113.0/24
// (TEST-NET-3, RFC 5737).
func ScaleGroups(base GroupConfig, n int) ([]GroupConfig, error) {
	if n < 1 || n > MaxGroups {
		return nil, fmt.Errorf("lab: %d groups on one interface, want 1..%d (one per VRID)", n, MaxGroups)
	}
	if base.VRID < 1 || base.VRID > 255 {
		return nil, fmt.Errorf("lab: base vrid %d out of 1..255", base.VRID)
	}
	out := []GroupConfig{base}
	net3 := netip.MustParseAddr("203.0.113.0").As4()
	vrid := 0
	for k := 2; k <= n; k++ {
		vrid++
		if vrid == base.VRID {
			vrid++
		}
		g := base
		g.Priorities = slices.Clone(base.Priorities)
		g.VRID = vrid
		a := net3
		a[3] = byte(k - 1) // 1..254
		g.VIP = netip.PrefixFrom(netip.AddrFrom4(a), 32)
		out = append(out, g)
	}
	return out, nil
}

// Markers of the generated configs where an instance starts.
const (
	keepalivedInstanceStart = "vrrp_instance lab {"
	vipdInstanceStart       = "[[instance]]"
	vipdInstanceName        = `name = "lab"`
)

// extraInstances renders groups[1:] for node as instance blocks to append
// to the config of groups[0]: the same renderer as the single-group lab,
// so every group is configured as the one-group row is, renamed g2, g3, ...
func extraInstances(kind DaemonKind, node int, groups []GroupConfig) ([]byte, error) {
	var b bytes.Buffer
	for k, g := range groups {
		if k == 0 {
			continue
		}
		if err := g.Validate(); err != nil {
			return nil, fmt.Errorf("lab: group %d: %w", k+1, err)
		}
		name := fmt.Sprintf("g%d", k+1)
		var full []byte
		var start, oldName, newName string
		switch kind {
		case Keepalived:
			full, start = keepalivedConfig(node, g), keepalivedInstanceStart
			oldName, newName = keepalivedInstanceStart, "vrrp_instance "+name+" {"
		case Vipd:
			full, start = vipdConfig(node, g, "", ""), vipdInstanceStart
			oldName, newName = vipdInstanceName, fmt.Sprintf("name = %q", name)
		default:
			return nil, fmt.Errorf("lab: unknown daemon kind %v", kind)
		}
		i := bytes.Index(full, []byte(start))
		if i < 0 {
			return nil, fmt.Errorf("lab: %s config has no %q to start an instance at", kind, start)
		}
		inst := full[i:]
		if !bytes.Contains(inst, []byte(oldName)) {
			return nil, fmt.Errorf("lab: %s config has no %q to rename", kind, oldName)
		}
		b.WriteString("\n")
		b.Write(bytes.Replace(inst, []byte(oldName), []byte(newName), 1))
	}
	return b.Bytes(), nil
}

// errNoGroups is returned for a scale config that would measure nothing.
var errNoGroups = errors.New("lab: scale: nothing to measure (no intervals and no groups)")

// scaleLogName names a kept daemon log: the daemon, the configuration and
// the node, e.g. vipd-255groups-1s-n2.log.
func scaleLogName(kind DaemonKind, groups int, iv time.Duration, node int) string {
	return fmt.Sprintf("%s-%s-%v-%s.log", kind, strings.ReplaceAll(groupsText(groups), " ", ""), iv, NodeName(node))
}

// keepLog appends the log at src to dst: a configuration measured by two
// labs in one run keeps both, one after the other.
func keepLog(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
