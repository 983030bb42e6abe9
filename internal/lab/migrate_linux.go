package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"text/tabwriter"
	"time"
)

// The rolling replacement (issue 17): three nodes run keepalived with a
// stock VRRPv2 config; each is replaced by vipd with the config `vipd
// import-keepalived` makes of it, Backups first and the Master last, then
// the group moves to VRRPv3 with one reload per node. Every step is
// measured: moves of the address, client outage, time with two holders.

// MigrationOptions configure RunMigration.
type MigrationOptions struct {
	Vipd string // the vipd binary: the daemon and its converter
	// Interval is keepalived's advert_int: whole seconds (VRRPv2).
	Interval time.Duration
	// Settle is how long each step is watched after it is done, longer
	// than any Master_Down_Interval so a late move is seen (default 5s).
	Settle time.Duration
	// Dir keeps configs and logs; empty: a temporary directory.
	Dir string
}

// MigrationStep is one step and what the monitor saw during it and its
// settle time.
type MigrationStep struct {
	Name  string `json:"name"`
	Node  int    `json:"node"`
	Moves int    `json:"moves"` // acquisitions of the VIP by a node
	// Holder is the only holder at the end, 0 for none or several.
	Holder      int     `json:"holder"`
	TwoHoldersS float64 `json:"two_holders_s"`
	// OutageMS is the longest the client's probes went unanswered.
	OutageMS float64 `json:"outage_ms"`
	Lost     int     `json:"lost"`
	Sent     int     `json:"sent"`
	Detail   string  `json:"detail,omitempty"`
}

// MigrationResult is the whole rolling replacement.
type MigrationResult struct {
	Steps []MigrationStep `json:"steps"`
	// Totals over all steps after keepalived's initial election.
	Moves       int     `json:"moves"`
	TwoHoldersS float64 `json:"two_holders_s"`
	OutageMS    float64 `json:"outage_ms"`
}

// migrationGroup is the stock group: keepalived's default VRRPv2, PASS
// authentication, priorities 150/100/50, every node starting as BACKUP.
func migrationGroup(interval time.Duration) GroupConfig {
	g := DefaultGroupConfig(3, interval)
	g.Version, g.AuthPass = 2, "k8s-api1"
	return g
}

// RunMigration runs the rolling replacement in a lab of its own.
func RunMigration(ctx context.Context, log *slog.Logger, opts MigrationOptions) (MigrationResult, error) {
	if opts.Interval == 0 {
		opts.Interval = time.Second
	}
	if opts.Settle == 0 {
		opts.Settle = 5 * time.Second
	}
	g := migrationGroup(opts.Interval)
	l, err := New(ctx, log, Options{Nodes: 3, Dir: opts.Dir, KeepDir: opts.Dir != ""})
	if err != nil {
		return MigrationResult{}, err
	}
	defer l.Close()
	mon, err := l.Watch(ctx, g.VIP.Addr(), g.VRID, nil)
	if err != nil {
		return MigrationResult{}, err
	}
	defer mon.Close()
	prober, err := l.StartProber(ctx, g.VIP.Addr(), 10*time.Millisecond)
	if err != nil {
		return MigrationResult{}, err
	}
	defer prober.Stop()
	m := &migration{l: l, g: g, opts: opts, mon: mon, prober: prober, start: time.Now(), daemons: make([]*Daemon, 4)}

	for i := 1; i <= 3; i++ {
		if m.daemons[i], err = l.StartDaemon(i, DaemonSpec{Kind: Keepalived, Group: g}); err != nil {
			return m.res, err
		}
	}
	if _, err := m.wait(ctx, "keepalived electing n1", 30*time.Second, func(s State) bool { return s.OnlyHolder() == 1 && prober.Flowing(time.Second, 100*time.Millisecond) }); err != nil {
		return m.res, err
	}
	time.Sleep(opts.Settle)

	// Backups first: they hold nothing, so stopping keepalived there moves
	// nothing; vipd starts as a Backup of keepalived's Master.
	for _, i := range []int{3, 2} {
		if err := m.step(ctx, fmt.Sprintf("n%d (Backup): stop keepalived, start vipd", i), i, func() error { return m.replace(ctx, i, false) }); err != nil {
			return m.res, err
		}
	}
	// The Master last: keepalived killed (its VIP stays, no priority 0),
	// vipd started at once with the adopt marker keeps it as Master.
	if err := m.step(ctx, "n1 (Master): kill keepalived, start vipd adopting the VIP", 1, func() error { return m.replace(ctx, 1, true) }); err != nil {
		return m.res, err
	}
	// VRRPv3, one reload per node, Backups first; accept_versions = [2, 3]
	// keeps nodes of both versions in one group meanwhile.
	for _, i := range []int{3, 2, 1} {
		if err := m.step(ctx, fmt.Sprintf("n%d: reload with version = 3", i), i, func() error { return m.toV3(ctx, i) }); err != nil {
			return m.res, err
		}
	}
	for _, s := range m.res.Steps {
		m.res.Moves += s.Moves
		m.res.TwoHoldersS += s.TwoHoldersS
		m.res.OutageMS = max(m.res.OutageMS, s.OutageMS)
	}
	return m.res, nil
}

type migration struct {
	l       *Lab
	g       GroupConfig
	opts    MigrationOptions
	mon     *Monitor
	prober  *Prober
	start   time.Time
	daemons []*Daemon
	res     MigrationResult
}

func (m *migration) wait(ctx context.Context, what string, timeout time.Duration, cond func(State) bool) (State, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := m.mon.Wait(ctx, 20*time.Millisecond, cond)
	if err != nil {
		return s, fmt.Errorf("lab: waiting for %s: %w (holders %v)", what, err, s.Holders)
	}
	return s, nil
}

// step runs do, watches the settle time, and records what happened.
func (m *migration) step(ctx context.Context, name string, node int, do func() error) error {
	from := time.Now()
	err := do()
	if err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(m.opts.Settle):
		}
	}
	to := time.Now()
	st := holderStats(m.mon.Events(m.start, to), 3, from, to)
	gap := m.prober.LongestGap(from, to)
	lost, sent := m.prober.Lost(from, to)
	s := MigrationStep{Name: name, Node: node, Moves: st.Acquisitions, Holder: m.mon.State().OnlyHolder(),
		TwoHoldersS: st.TwoHolders.Seconds(), OutageMS: ms(gap.Len), Lost: lost, Sent: sent}
	if err != nil {
		s.Detail = err.Error()
	}
	m.res.Steps = append(m.res.Steps, s)
	return err
}

// replace stops node i's keepalived and starts vipd with the converted
// config; adopt kills keepalived instead (its VIP stays) and has vipd
// adopt the VIP.
func (m *migration) replace(ctx context.Context, i int, adopt bool) error {
	ka := m.daemons[i]
	converted, err := m.convert(ctx, ka.ConfigPath(), i)
	if err != nil {
		return err
	}
	dir := filepath.Dir(ka.ConfigPath())
	if adopt {
		if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "state", "adopt"), nil, 0o644); err != nil {
			return err
		}
		if err := ka.Kill(); err != nil {
			return err
		}
	} else if err := ka.Stop(5 * time.Second); err != nil {
		return fmt.Errorf("lab: stopping keepalived on n%d: %w", i, err)
	}
	<-ka.Done()
	spec := DaemonSpec{Kind: Vipd, Binary: m.opts.Vipd, Group: m.g, Config: func(int, []byte) []byte { return converted }}
	d, err := m.l.StartDaemon(i, spec)
	if err != nil {
		return err
	}
	m.daemons[i] = d
	want := "to=BACKUP"
	if adopt {
		want = "adopted the addresses"
	}
	return waitLine(ctx, d, want, 10*time.Second)
}

// convert runs vipd import-keepalived on node i's keepalived.conf and
// points the result's socket and state at the node's lab directory.
func (m *migration) convert(ctx context.Context, kaConf string, i int) ([]byte, error) {
	out, err := exec.CommandContext(ctx, m.opts.Vipd, "import-keepalived", kaConf).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		return nil, fmt.Errorf("lab: converting n%d's keepalived.conf: %w", i, err)
	}
	dir := filepath.Dir(kaConf)
	lab := fmt.Sprintf("[global]\nsocket = %q\nstate_dir = %q\nlog_format = \"text\"\nlog_level = \"debug\"\n",
		filepath.Join(dir, "vipd.sock"), filepath.Join(dir, "state"))
	global := regexp.MustCompile(`(?m)^\[global\]\n`)
	if global.Match(out) {
		return global.ReplaceAll(out, []byte(lab)), nil
	}
	return append([]byte(lab+"\n"), out...), nil
}

// toV3 rewrites node i's config to VRRPv3 and reloads it.
func (m *migration) toV3(ctx context.Context, i int) error {
	d := m.daemons[i]
	cfg, err := os.ReadFile(d.ConfigPath())
	if err != nil {
		return err
	}
	v2 := regexp.MustCompile(`(?m)^version = 2$`)
	if !v2.Match(cfg) {
		return fmt.Errorf("lab: n%d's converted config has no version = 2 line", i)
	}
	if err := os.WriteFile(d.ConfigPath(), v2.ReplaceAll(cfg, []byte("version = 3")), 0o644); err != nil {
		return err
	}
	sock := filepath.Join(filepath.Dir(d.ConfigPath()), "vipd.sock")
	if out, err := exec.CommandContext(ctx, m.opts.Vipd, "reload", "--socket", sock).CombinedOutput(); err != nil {
		return fmt.Errorf("lab: reloading n%d: %w: %s", i, err, bytes.TrimSpace(out))
	}
	return nil
}

// waitLine waits until d has written a line containing part.
func waitLine(ctx context.Context, d *Daemon, part string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, line := range d.Lines(time.Time{}) {
			if bytes.Contains([]byte(line.Text), []byte(part)) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.Done():
			return fmt.Errorf("lab: n%d's %s exited (%s) before logging %q", d.Node(), d.Kind(), exitText(d.Err()), part)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("lab: n%d's %s did not log %q within %v (log %s)", d.Node(), d.Kind(), part, timeout, d.LogPath())
}

// WriteMigrationText prints the steps as a table.
func WriteMigrationText(w io.Writer, r MigrationResult) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "step\tmoves\tholder\ttwo holders\tlongest silence\tprobes lost\n")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%s\t%d\tn%d\t%.3fs\t%.1fms\t%d/%d\n", s.Name, s.Moves, s.Holder, s.TwoHoldersS, s.OutageMS, s.Lost, s.Sent)
	}
	fmt.Fprintf(tw, "total\t%d\t\t%.3fs\t%.1fms (longest)\t\n", r.Moves, r.TwoHoldersS, r.OutageMS)
	return tw.Flush()
}
