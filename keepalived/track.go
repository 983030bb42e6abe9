package keepalived

import (
	"fmt"
	"strings"
	"time"

	"github.com/vipd/vipd/config"
)

// vrrpScript is a vrrp_script block, read once and used by every instance
// that tracks it.
type vrrpScript struct {
	node     *Node
	name     string
	argv     []string // nil: not convertible (why says why)
	why      string
	line     string // the script line as keepalived has it
	shell    string // a warning: the line looks like it needs a shell
	interval time.Duration
	timeout  time.Duration
	weight   int
	fall     int
	rise     int
	reverse  bool
	initFail bool
	used     bool
	// timeoutSet: keepalived's default timeout is the interval.
	timeoutSet bool
}

// vipd's tracker limits (health.Spec).
const (
	minTrackInterval = 100 * time.Millisecond
	maxTrackInterval = time.Hour
	maxFallRise      = 100
)

// vrrpScript reads a vrrp_script block.
func (c *converter) vrrpScript(n *Node) {
	if len(n.Args) == 0 {
		c.unconverted(n.Pos, "vrrp_script without a name")
		return
	}
	s := &vrrpScript{node: n, name: n.Args[0].Text, interval: time.Second, fall: 1, rise: 1}
	for _, k := range n.Block {
		var arg Word
		if len(k.Args) > 0 {
			arg = k.Args[0]
		} else if k.Key != "init_fail" {
			c.unconverted(k.Pos, "vrrp_script %s: %s needs a value", s.name, k.Key)
			continue
		}
		var err error
		switch k.Key {
		case "script":
			s.line = arg.Text
			s.argv, s.why, s.shell = scriptArgv(arg.Text)
		case "interval":
			s.interval, err = seconds(arg)
		case "timeout":
			s.timeout, err = seconds(arg)
			s.timeoutSet = true
		case "weight":
			s.weight, err = integer(arg, -253, 253)
			if len(k.Args) > 1 && k.Args[1].Text == "reverse" {
				s.reverse = true
			}
		case "fall":
			s.fall, err = integer(arg, 1, 1<<20)
		case "rise":
			s.rise, err = integer(arg, 1, 1<<20)
		case "user":
			c.note(k.Pos, "vrrp_script %s: user %s: vipd runs trackers as its own user, vipd; give that user what the script needs (vipd(8), SYSTEMD)", s.name, joinWords(k.Args))
		case "init_fail":
			s.initFail = true
		default:
			c.unconverted(k.Pos, "vrrp_script %s: %s is not a keyword the converter knows", s.name, k.Key)
		}
		if err != nil {
			c.unconverted(k.Pos, "vrrp_script %s: %s: %v", s.name, k.Key, err)
		}
	}
	if !s.timeoutSet {
		s.timeout = s.interval // keepalived's default
	}
	if s.line == "" {
		s.why = "it has no script"
	}
	c.scripts[s.name] = s
}

// scriptArgv splits a script line as keepalived does: words at unquoted
// whitespace, single quotes keeping theirs. keepalived runs the result
// without a shell, except a line starting "</" (a file openable test),
// which it gives to /bin/sh. why says why the line cannot be a vipd
// command; shell warns of shell syntax, which keepalived passes on as
// arguments.
func scriptArgv(line string) (argv []string, why, shell string) {
	trimmed := strings.TrimSpace(line)
	if strings.HasPrefix(strings.Join(strings.Fields(trimmed), ""), "</") {
		if strings.Contains(trimmed, "/dev/tcp/") || strings.Contains(trimmed, "/dev/udp/") {
			shell = fmt.Sprintf("the script line %q starts with '<', which keepalived gives to /bin/sh, and so does vipd; but /dev/tcp and /dev/udp are bash's, and dash, Debian's /bin/sh, cannot open them, under keepalived as under vipd. Use [\"/bin/bash\", \"-c\", ...], or an http tracker", trimmed)
		}
		return []string{"/bin/sh", "-c", trimmed}, "", shell
	}
	var (
		cur    strings.Builder
		inWord bool
		quoted bool
	)
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quoted && ch == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(ch)
		case ch == '\'':
			quoted, inWord = true, true
		case ch == ' ' || ch == '\t':
			if inWord {
				argv = append(argv, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			if strings.IndexByte("|&;<>()$`*?[]~\\\"", ch) >= 0 && shell == "" {
				shell = fmt.Sprintf("the script line %q has shell syntax (%q), but keepalived runs it without a shell, passing such words to the program as arguments, and so does vipd. If a shell was meant, write command = [\"/bin/sh\", \"-c\", ...]", line, string(ch))
			}
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		argv = append(argv, cur.String())
	}
	switch {
	case len(argv) == 0:
		return nil, "its script is empty", ""
	case !strings.HasPrefix(argv[0], "/"):
		what := "a relative path, which keepalived resolves against its working directory"
		if !strings.Contains(argv[0], "/") {
			what = "a bare name, which keepalived looks for in PATH"
		}
		return nil, fmt.Sprintf("its program %q is %s; vipd runs commands without a PATH search and needs the absolute path (for example the output of `command -v %s`)", argv[0], what, argv[0]), ""
	}
	return argv, "", shell
}

// track converts one track_* block of an instance.
func (c *converter) track(in *instance, n *Node) {
	switch n.Key {
	case "track_script":
		for _, e := range trackEntries(c, n) {
			c.trackScript(in, e)
		}
	case "track_interface":
		for _, e := range trackEntries(c, n) {
			c.trackInterface(in, e)
		}
	case "track_file":
		for _, e := range trackEntries(c, n) {
			c.trackFile(in, e)
		}
	case "track_process":
		c.unconverted(n.Pos, "track_process: vipd has no process tracker; an exec tracker such as [\"/usr/bin/pgrep\", \"-x\", \"NAME\"] does the same")
	case "track_bfd":
		c.unconverted(n.Pos, "track_bfd: vipd has no BFD tracker (its BFD is for BGP sessions only)")
	}
}

// trackEntry is one line of a track_* block: a name, an optional weight and
// reverse.
type trackEntry struct {
	name      Word
	weight    int
	weightSet bool
	reverse   bool
}

func trackEntries(c *converter, n *Node) []trackEntry {
	var out []trackEntry
	ws := flatWords(n)
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		switch {
		case w.Text == "weight" && len(out) > 0 && i+1 < len(ws):
			v, err := integer(ws[i+1], -254, 254)
			i++
			if err != nil {
				c.unconverted(w.Pos, "%s %s: weight: %v", n.Key, out[len(out)-1].name.Text, err)
				continue
			}
			out[len(out)-1].weight, out[len(out)-1].weightSet = v, true
		case (w.Text == "reverse" || w.Text == "noreverse") && len(out) > 0:
			out[len(out)-1].reverse = w.Text == "reverse"
		default:
			out = append(out, trackEntry{name: w})
		}
	}
	return out
}

// newTrack starts an [[instance.track]] table with a name unique within
// the instance.
func (c *converter) newTrack(in *instance, kaName string, at Pos, from string) *table {
	taken := map[string]bool{}
	for _, t := range in.tracks {
		if v, ok := t.get("name"); ok {
			taken[strings.Trim(v, `"`)] = true
		}
	}
	t := &table{header: "[[instance.track]]", comment: []string{fmt.Sprintf("%s (%s)", from, at)}}
	t.set("name", tomlString(vipdName(kaName, taken)))
	in.tracks = append(in.tracks, t)
	return t
}

// weightComment explains a weight in vipd's words, which are keepalived's.
func weightComment(w int) string {
	switch {
	case w == 0:
		return "weight 0: the instance is in Fault (and releases the VIPs) while the tracker fails, as in keepalived."
	case w < 0:
		return fmt.Sprintf("weight %d: subtracted from the priority while the tracker fails, as in keepalived.", w)
	}
	return fmt.Sprintf("weight %d: added to the priority while the tracker is healthy, as in keepalived.", w)
}

func (c *converter) trackScript(in *instance, e trackEntry) {
	s := c.scripts[e.name.Text]
	if s == nil {
		c.unconverted(e.name.Pos, "track_script %s: no vrrp_script of that name", e.name.Text)
		return
	}
	s.used = true
	weight, reverse := s.weight, s.reverse
	if e.weightSet {
		weight, reverse = e.weight, e.reverse
	}
	switch {
	case s.argv == nil:
		c.unconverted(e.name.Pos, "track_script %s: vrrp_script %s (%s): %s", e.name.Text, s.name, s.node.Pos, s.why)
		return
	case reverse:
		c.unconverted(e.name.Pos, "track_script %s: reverse weights are not supported by vipd", e.name.Text)
		return
	}
	interval := min(max(s.interval, minTrackInterval), maxTrackInterval)
	timeout := s.timeout
	if timeout >= interval || timeout <= 0 {
		// vipd ends one check before the next starts.
		timeout = interval - interval/10
	}
	fall, rise := min(s.fall, maxFallRise), min(s.rise, maxFallRise)
	t := c.newTrack(in, s.name, s.node.Pos, "vrrp_script "+s.name)
	t.set("type", tomlString("exec"))
	how := "run without a shell as keepalived does"
	if s.argv[0] == "/bin/sh" && !strings.HasPrefix(s.line, "/bin/sh") {
		how = "through /bin/sh, as keepalived runs a line that starts with '<'"
	}
	t.set("command", tomlStrings(s.argv), fmt.Sprintf("script %q, %s, as user vipd (keepalived: root or keepalived_script).", s.line, how))
	if s.shell != "" {
		c.warn(s.node.Pos, "vrrp_script %s: %s", s.name, s.shell)
		t.del("command")
		t.set("command", tomlStrings(s.argv), "WARNING: "+s.shell+".")
	}
	t.set("weight", tomlInt(weight), weightComment(weight))
	t.set("interval", tomlString(config.FormatDuration(interval.Round(time.Millisecond))))
	var cm []string
	if timeout != s.timeout {
		was := "timeout " + config.FormatDuration(s.timeout)
		if !s.timeoutSet {
			was = "default timeout, the interval,"
		}
		cm = append(cm, fmt.Sprintf("NOTE: keepalived's %s is not shorter than interval, which vipd requires.", was))
		c.note(s.node.Pos, "vrrp_script %s: keepalived's %s is not shorter than the interval, which vipd requires; %s is used", s.name, was, config.FormatDuration(timeout.Round(time.Millisecond)))
	}
	t.set("timeout", tomlString(config.FormatDuration(timeout.Round(time.Millisecond))), cm...)
	t.set("fall", tomlInt(fall))
	t.set("rise", tomlInt(rise))
	if interval != s.interval || fall != s.fall || rise != s.rise {
		c.warn(s.node.Pos, "vrrp_script %s: vipd takes interval 100ms..1h and fall, rise 1..100; the values were brought into range", s.name)
	}
	if s.initFail {
		c.note(s.node.Pos, "vrrp_script %s: init_fail: a vipd tracker starts healthy, so that a restart does not move the VIP", s.name)
	}
}

func (c *converter) trackInterface(in *instance, e trackEntry) {
	if e.reverse {
		c.unconverted(e.name.Pos, "track_interface %s: reverse weights are not supported by vipd", e.name.Text)
		return
	}
	if msg := ifnameProblem(e.name.Text); msg != "" {
		c.unconverted(e.name.Pos, "track_interface: %s", msg)
		return
	}
	t := c.newTrack(in, e.name.Text, e.name.Pos, "track_interface "+e.name.Text)
	t.set("type", tomlString("interface"))
	t.set("interface", tomlString(e.name.Text))
	// keepalived's default for track_interface is Fault, weight 0.
	t.set("weight", tomlInt(e.weight), weightComment(e.weight))
	// keepalived reacts to a link change at once.
	t.set("interval", tomlString("1s"), "NOTE: keepalived reacts to the link change at once; vipd's interface tracker checks every interval.")
	t.set("fall", "1")
	t.set("rise", "1")
}

// trackFile reports track_file: keepalived reads a number from the file
// and adds weight × value (weight 0: Fault while it is not 0); vipd's file
// tracker fails while the file exists, which is another signal.
func (c *converter) trackFile(in *instance, e trackEntry) {
	f := c.files[e.name.Text]
	file := ""
	if f != nil {
		for _, k := range f.Block {
			if k.Key == "file" && len(k.Args) > 0 {
				file = k.Args[0].Text
			}
		}
	}
	at := e.name.Pos
	if file == "" {
		c.unconverted(at, "track_file %s: no track_file block with a file of that name", e.name.Text)
		return
	}
	c.unconverted(at, "track_file %s (%s): keepalived reads a number from %s and adds weight × that number to the priority (weight 0: Fault while it is not 0); vipd's file tracker fails while a file exists, another signal. For a drain switch, use a vipd file tracker on a path that exists only while draining; for the value, an exec tracker such as [\"/bin/sh\", \"-c\", \"test \\\"$(cat %s)\\\" = 0\"] with weight 0", e.name.Text, f.Pos, file, file)
}
