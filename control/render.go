package control

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The renderers write what `vipd status`, `history`, `drain` and `reload`
// print: plain columns for a person at an 80–120 column terminal, no color,
// the most telling column (the cause) last so that a long one only wraps.

// table aligns tab-separated cells in columns two spaces apart, and
// writes the lines without the padding an empty last cell leaves behind.
type table struct {
	out io.Writer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	t := &table{out: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

func (t *table) Write(p []byte) (int, error) { return t.tw.Write(p) }

func (t *table) Flush() {
	t.tw.Flush()
	for line := range strings.Lines(t.buf.String()) {
		io.WriteString(t.out, strings.TrimRight(line, " \n")+"\n")
	}
	t.buf.Reset()
}

// RenderDaemon writes the line above a status that says which binary
// answers, e.g. "running vipd 1.2.0 (commit 3f2a9c1, go1.26.8) since
// 15:02:05 (3h2m ago), pid 812". The time is when this binary started: a
// re-exec upgrade keeps the PID.
func RenderDaemon(w io.Writer, d DaemonInfo, now time.Time) {
	var build []string
	if d.Commit != "" {
		c := d.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		build = append(build, "commit "+c)
	}
	if d.GoVersion != "" {
		build = append(build, d.GoVersion)
	}
	line := "running vipd " + orDash(d.Version)
	if len(build) > 0 {
		line += " (" + strings.Join(build, ", ") + ")"
	}
	if !d.StartedAt.IsZero() {
		line += " since " + sinceCell(d.StartedAt, now)
	}
	if d.PID > 0 {
		line += fmt.Sprintf(", pid %d", d.PID)
	}
	fmt.Fprintln(w, line)
	if d.Host != nil {
		fmt.Fprintln(w, "host: "+d.Host.String())
	}
	for _, p := range d.BGPPeers {
		line := fmt.Sprintf("bgp peer %v AS%d %s", p.Address, p.ASN, p.State)
		if !p.Since.IsZero() {
			line += " since " + sinceCell(p.Since, now)
		}
		line += fmt.Sprintf(", %d prefixes sent", p.PrefixesSent)
		if p.LastError != "" {
			line += "; last error: " + p.LastError
		}
		if !p.Up && p.Failures > 0 {
			line += fmt.Sprintf("; %d failed attempts", p.Failures)
			if !p.RetryAt.IsZero() {
				line += fmt.Sprintf(", next in %v", max(p.RetryAt.Sub(now), 0).Round(time.Second))
			}
		}
		fmt.Fprintln(w, line)
	}
	for _, ifname := range slices.Sorted(maps.Keys(d.InterfaceDrops)) {
		byReason := d.InterfaceDrops[ifname]
		var parts []string
		total := uint64(0)
		for _, r := range slices.Sorted(maps.Keys(byReason)) {
			parts = append(parts, fmt.Sprintf("%s %d", r, byReason[r]))
			total += byReason[r]
		}
		fmt.Fprintf(w, "interface %s: %d adverts no instance claims (%s)\n", ifname, total, strings.Join(parts, ", "))
	}
}

// RenderStatus writes one line per instance, then a block of details for
// each instance that has trackers, drops, warnings, a drain or a Master
// elsewhere. Times are shown in now's location, ages relative to now.
func RenderStatus(w io.Writer, sts []InstanceStatus, now time.Time) {
	if len(sts) == 0 {
		fmt.Fprintln(w, "no instances configured")
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "INSTANCE\tSTATE\tSINCE\tPRIO\tMASTER\tVIPS\tMOVES\tLAST CAUSE")
	for _, st := range sts {
		cause := "-"
		if st.LastTransition != nil && st.LastTransition.Cause != "" {
			cause = st.LastTransition.Cause
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n",
			st.Name, stateCell(st), sinceCell(st.Since, now), prioCell(st.Priority),
			masterCell(st), vipsCell(st), st.Transitions, cause)
	}
	tw.Flush()
	for _, st := range sts {
		renderDetails(w, st, now)
	}
}

func stateCell(st InstanceStatus) string {
	s := string(st.State)
	if s == "" {
		s = "?"
	}
	if st.Drained {
		s += " (drained)"
	}
	return s
}

func sinceCell(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return clock(t, now) + " (" + ago(t, now) + ")"
}

// prioCell shows the arithmetic when trackers moved the priority:
// 110-20=90 reads as base, change, effective.
func prioCell(p Priority) string {
	if p.Base == p.Effective {
		return strconv.Itoa(p.Effective)
	}
	return fmt.Sprintf("%d%+d=%d", p.Base, p.Effective-p.Base, p.Effective)
}

func masterCell(st InstanceStatus) string {
	if st.State == StateMaster {
		if st.LocalAddress.IsValid() {
			return st.LocalAddress.String() + " (us)"
		}
		return "us"
	}
	if !st.Master.Address.IsValid() {
		return "-"
	}
	if st.Master.Address == st.LocalAddress {
		return st.Master.Address.String() + " (us)"
	}
	return st.Master.Address.String()
}

// vipsCell names the first address and counts the rest; whether they are
// held is said only where it is news: always for a Master, and for anyone
// else that holds them, which should not happen.
func vipsCell(st InstanceStatus) string {
	if len(st.VIPs) == 0 {
		return "-"
	}
	s := prefixString(st.VIPs[0])
	if len(st.VIPs) > 1 {
		s += fmt.Sprintf(" +%d", len(st.VIPs)-1)
	}
	switch {
	case st.State == StateMaster && st.VIPsHeld:
		s += " held"
	case st.State == StateMaster:
		s += " NOT HELD"
	case st.VIPsHeld:
		s += " HELD"
	}
	return s
}

// prefixString leaves out a host prefix's length: 192.0.2.10, not /32.
func prefixString(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

func hasDetails(st InstanceStatus) bool {
	return len(st.Trackers) > 0 || len(st.Counters.Drops) > 0 || len(st.Warnings) > 0 || peersWithForm(st, "rfc9568") != "" || peersWithForm(st, "vrrpv2") != "" && st.Version != 2 || st.Waiting != "" ||
		(st.Announce != "" && st.Announce != "arp") ||
		st.Drained || len(st.VIPs) > 1 || otherMaster(st) || hasParts(st.Priority)
}

func otherMaster(st InstanceStatus) bool {
	return st.State != StateMaster && st.Master.Address.IsValid() && st.Master.Address != st.LocalAddress
}

func hasParts(p Priority) bool {
	for _, part := range p.Parts {
		if part.Contribution != 0 {
			return true
		}
	}
	return false
}

func renderDetails(w io.Writer, st InstanceStatus, now time.Time) {
	if !hasDetails(st) {
		return
	}
	fmt.Fprintf(w, "\n%s (%s, vrid %d): adverts sent %d, received %d; gratuitous ARP sent %d\n",
		st.Name, orDash(st.Interface), st.VRID,
		st.Counters.AdvertsSent, st.Counters.AdvertsReceived, st.Counters.GARPSent)
	tw := newTable(w)
	if st.Drained {
		note := st.DrainNote
		if note == "" {
			note = "(no note)"
		}
		fmt.Fprintf(tw, "  drained\t%s\n", note)
	}
	if len(st.VIPs) > 1 {
		vips := make([]string, len(st.VIPs))
		for i, p := range st.VIPs {
			vips[i] = prefixString(p)
		}
		fmt.Fprintf(tw, "  vips\t%s\n", strings.Join(vips, " "))
	}
	if otherMaster(st) {
		m := st.Master
		line := fmt.Sprintf("%v priority %d", m.Address, m.Priority)
		if m.AdvertInterval > 0 {
			line += fmt.Sprintf(", adverts every %v", m.AdvertInterval)
		}
		if !m.LastSeen.IsZero() {
			line += ", last seen " + ago(m.LastSeen, now)
		}
		fmt.Fprintf(tw, "  master\t%s\n", line)
	}
	if hasParts(st.Priority) {
		line := fmt.Sprintf("%d base", st.Priority.Base)
		for _, part := range st.Priority.Parts {
			if part.Contribution == 0 {
				continue
			}
			line += fmt.Sprintf(", %+d %s", part.Contribution, part.Tracker)
			if part.Detail != "" {
				line += " (" + part.Detail + ")"
			}
		}
		line += fmt.Sprintf(" = %d", st.Priority.Effective)
		fmt.Fprintf(tw, "  priority\t%s\n", line)
	}
	for _, tr := range st.Trackers {
		health := "ok"
		if !tr.Healthy {
			health = "FAILING"
		}
		since := "-"
		if !tr.Since.IsZero() {
			since = "since " + clock(tr.Since, now)
		}
		checked := "not checked yet"
		if !tr.LastCheck.IsZero() {
			checked = "checked " + ago(tr.LastCheck, now) + " in " + tr.LastDuration.String()
		}
		weight := "weight 0 (fault)"
		if tr.Weight != 0 {
			weight = fmt.Sprintf("weight %+d", tr.Weight)
		}
		fmt.Fprintf(tw, "  tracker\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			tr.Name, orDash(tr.Type), health, since, checked, weight, tr.Detail)
	}
	if len(st.Counters.Drops) > 0 {
		fmt.Fprintf(tw, "  drops\t%s\n", dropsLine(st.Counters.Drops))
	}
	if st.Waiting != "" {
		fmt.Fprintf(tw, "  waiting\t%s\n", st.Waiting)
	}
	if st.Announce != "" && st.Announce != "arp" {
		routes := "none announced"
		if len(st.Routes) > 0 {
			var rs []string
			for _, r := range st.Routes {
				rs = append(rs, r.String())
			}
			routes = strings.Join(rs, ", ")
		}
		fmt.Fprintf(tw, "  %s\troutes: %s\n", st.Announce, routes)
	}
	if peers := peersWithForm(st, "rfc9568"); peers != "" {
		fmt.Fprintf(tw, "  checksum\tRFC 9568 form (no IPv4 pseudo-header) from %s\n", peers)
	}
	if peers := peersWithForm(st, "vrrpv2"); peers != "" && st.Version != 2 {
		fmt.Fprintf(tw, "  version\tVRRPv2 adverts from %s\n", peers)
	}
	for _, warn := range st.Warnings {
		fmt.Fprintf(tw, "  WARNING\t%s\n", warn)
	}
	tw.Flush()
}

// peersWithForm lists the peers whose adverts use the checksum form, or
// "vrrpv2"; the RFC 5798 form, everyone's default, goes unsaid.
func peersWithForm(st InstanceStatus, form string) string {
	var peers []string
	for a, f := range st.PeerChecksums {
		if f == form {
			peers = append(peers, a)
		}
	}
	slices.Sort(peers)
	return strings.Join(peers, ", ")
}

// dropsLine lists drop counters, most frequent first.
func dropsLine(drops map[string]uint64) string {
	reasons := make([]string, 0, len(drops))
	for r := range drops {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := reasons[i], reasons[j]
		if drops[a] != drops[b] {
			return drops[a] > drops[b]
		}
		return a < b
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s=%d", r, drops[r])
	}
	return strings.Join(parts, " ")
}

// RenderHistory writes one line per transition, in the order given: the
// time to the millisecond, the instance, FROM -> TO, and the cause.
func RenderHistory(w io.Writer, ts []Transition) {
	if len(ts) == 0 {
		fmt.Fprintln(w, "no transitions recorded")
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "TIME\tINSTANCE\tTRANSITION\tCAUSE")
	for _, t := range ts {
		cause := orDash(t.Cause)
		if t.TimerLate > 0 {
			cause += fmt.Sprintf(" [timer %v late]", time.Duration(t.TimerLate).Round(time.Millisecond))
		}
		if t.Host != nil {
			cause += " [" + t.Host.String() + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s -> %s\t%s\n",
			t.At.Format("2006-01-02 15:04:05.000"), orDash(t.Instance), t.From, t.To, cause)
	}
	tw.Flush()
}

// RenderDrain writes where each instance ended up after a drain or an
// undrain, then the warning, if any.
func RenderDrain(w io.Writer, res DrainResult) {
	if len(res.Instances) == 0 {
		fmt.Fprintln(w, "no instances affected")
	} else {
		takeover := false
		for _, in := range res.Instances {
			takeover = takeover || in.TakenOverBy.IsValid()
		}
		tw := newTable(w)
		if takeover {
			fmt.Fprintln(tw, "INSTANCE\tSTATE\tTAKEN OVER BY\tMESSAGE")
		} else {
			fmt.Fprintln(tw, "INSTANCE\tSTATE\tMESSAGE")
		}
		for _, in := range res.Instances {
			if takeover {
				by := "-"
				if in.TakenOverBy.IsValid() {
					by = in.TakenOverBy.String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", in.Name, in.State, by, in.Message)
			} else {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", in.Name, in.State, in.Message)
			}
		}
		tw.Flush()
	}
	if res.Warning != "" {
		fmt.Fprintf(w, "WARNING: %s\n", res.Warning)
	}
}

// RenderReload writes what a reload changed, or why it was refused.
func RenderReload(w io.Writer, res ReloadResult) {
	switch {
	case !res.OK:
		fmt.Fprintln(w, "reload refused; the daemon keeps running its previous configuration")
		for _, p := range res.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
		return
	case len(res.Changes) == 0:
		fmt.Fprintln(w, "reloaded: no changes")
		return
	case len(res.Changes) == 1:
		fmt.Fprintln(w, "reloaded: 1 change")
	default:
		fmt.Fprintf(w, "reloaded: %d changes\n", len(res.Changes))
	}
	for _, c := range res.Changes {
		fmt.Fprintf(w, "  %s\n", c)
	}
}

// clock shows a time as briefly as is unambiguous next to now: the time
// of day for today, the date as well for older times.
func clock(t, now time.Time) string {
	t = t.In(now.Location())
	ty, tm, td := t.Date()
	ny, nm, nd := now.Date()
	switch {
	case ty == ny && tm == nm && td == nd:
		return t.Format("15:04:05")
	case ty == ny:
		return t.Format("Jan _2 15:04")
	}
	return t.Format("2006-01-02 15:04")
}

// ago is a compact age with at most two units: 0.4s ago, 42s ago, 3m5s
// ago, 3h2m ago, 2d4h ago.
func ago(t, now time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		// A clock step; a negative age would only confuse.
		d = 0
	}
	var s string
	switch {
	case d < 10*time.Second:
		s = strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm%ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		s = fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	default:
		s = fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
	}
	return s + " ago"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
