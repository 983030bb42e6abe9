package keepalived

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name → content under a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func parseString(t *testing.T, src string, opts ParseOptions) (*Config, string, error) {
	t.Helper()
	dir := writeFiles(t, map[string]string{"keepalived.conf": src})
	path := filepath.Join(dir, "keepalived.conf")
	cfg, err := ParseFile(path, opts)
	return cfg, path, err
}

// dump shows a tree as KEY(line) args {children}, one statement a line.
func dump(nodes []*Node, indent string) string {
	var b strings.Builder
	for _, n := range nodes {
		b.WriteString(indent + n.Key)
		for _, a := range n.Args {
			b.WriteString(" [" + a.Text + "]")
		}
		fmt.Fprintf(&b, " @%s:%02d\n", filepath.Base(n.Pos.File), n.Pos.Line)
		if n.HasBlock {
			b.WriteString(dump(n.Block, indent+"  "))
		}
	}
	return b.String()
}

func TestParseStructure(t *testing.T) {
	src := `! a comment
global_defs {   # another
    router_id "lb 1"   ! quoted, with a space
}
vrrp_instance VI_1
{
    virtual_ipaddress { 192.0.2.1 192.0.2.2 }
    notify_master "/bin/notify 'a b' \"q\" \x41" root
    auth_pass 'no#comment!here'
}
`
	cfg, _, err := parseString(t, src, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `global_defs @keepalived.conf:02
  router_id [lb 1] @keepalived.conf:03
vrrp_instance [VI_1] @keepalived.conf:05
  virtual_ipaddress @keepalived.conf:07
    192.0.2.1 [192.0.2.2] @keepalived.conf:07
  notify_master [/bin/notify 'a b' "q" A] [root] @keepalived.conf:08
  auth_pass [no#comment!here] @keepalived.conf:09
`
	if got := dump(cfg.Nodes, ""); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unclosed block", "vrrp_instance VI_1 {\n  interface eth0\n", "keepalived.conf:2: the block opened at KEEPALIVED:1 is not closed"},
		{"stray close", "global_defs {\n}\n}\n", "keepalived.conf:3: '}' closes no block"},
		{"brace alone", "{\n", "keepalived.conf:1: '{' without a keyword"},
		{"open quote", "global_defs {\n router_id \"lb\n}\n", "keepalived.conf:2: the quote \" opened here is not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, path, err := parseString(t, tt.src, ParseOptions{})
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err %v, want a *SyntaxError", err)
			}
			want := strings.ReplaceAll(tt.want, "KEEPALIVED", path)
			if got := err.Error(); !strings.Contains(got, want) || se.Pos.File != path {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestParseIncludes(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"keepalived.conf":   "global_defs {\n router_id a\n}\ninclude conf.d/*.conf\nincluder missing/*.conf\nvrrp_instance X {\n  include x/body.inc\n}\n",
		"conf.d/b.conf":     "vrrp_script b {\n}\n",
		"conf.d/a.conf":     "vrrp_script a {\n}\ninclude ../more/{one,two}.conf\n",
		"more/one.conf":     "vrrp_script one {\n}\n",
		"more/two.conf":     "vrrp_script two {\n}\n",
		"x/body.inc":        "interface eth0\n",
		"conf.d/skip.conf~": "broken {\n",
	})
	cfg, err := ParseFile(filepath.Join(dir, "keepalived.conf"), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `global_defs @keepalived.conf:01
  router_id [a] @keepalived.conf:02
vrrp_script [a] @a.conf:01
vrrp_script [one] @one.conf:01
vrrp_script [two] @two.conf:01
vrrp_script [b] @b.conf:01
vrrp_instance [X] @keepalived.conf:06
  interface [eth0] @body.inc:01
`
	if got := dump(cfg.Nodes, ""); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(cfg.Files) != 6 {
		t.Errorf("files read: %q", cfg.Files)
	}
	if len(cfg.Skipped) != 1 || !strings.Contains(cfg.Skipped[0].Message, "matches no file") || cfg.Skipped[0].Pos.Line != 5 {
		t.Errorf("skipped: %v", cfg.Skipped)
	}
}

func TestParseIncludeErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"keepalived.conf": "include self.conf\n",
		"self.conf":       "include self.conf\n",
	})
	if _, err := ParseFile(filepath.Join(dir, "keepalived.conf"), ParseOptions{}); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("self-include: %v", err)
	}
	dir = writeFiles(t, map[string]string{
		"keepalived.conf": "vrrp_instance X {\ninclude part.conf\n}\n",
		"part.conf":       "virtual_ipaddress {\n",
	})
	_, err := ParseFile(filepath.Join(dir, "keepalived.conf"), ParseOptions{})
	if err == nil || !strings.Contains(err.Error(), "part.conf:1: the block opened at "+filepath.Join(dir, "part.conf")+":1 is not closed") {
		t.Errorf("unclosed in an include: %v", err)
	}
	if _, err := ParseFile(filepath.Join(dir, "none.conf"), ParseOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing main file: %v", err)
	}
}

func TestParseParameters(t *testing.T) {
	src := `$IF=eth0
$NET=192.0.2
$VIP=${NET}.10
vrrp_instance VI_$IF {
  interface $IF
  virtual_ipaddress {
    $VIP
    ${VIP}0
    $UNDEFINED
  }
}
$MULTI= \
  interface eth1
@node1 priority 150
@^node1 priority 100
`
	cfg, _, err := parseString(t, src, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `vrrp_instance [VI_$IF] @keepalived.conf:04
  interface [eth0] @keepalived.conf:05
  virtual_ipaddress @keepalived.conf:06
    192.0.2.10 @keepalived.conf:07
    192.0.2.100 @keepalived.conf:08
    $UNDEFINED @keepalived.conf:09
`
	// "VI_$IF {": $IF is followed by a space, so it is replaced.
	want = strings.Replace(want, "[VI_$IF]", "[VI_eth0]", 1)
	if got := dump(cfg.Nodes, ""); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var msgs []string
	for _, s := range cfg.Skipped {
		msgs = append(msgs, s.Pos.String()[len(s.Pos.File):]+" "+s.Message)
	}
	joined := strings.Join(msgs, "\n")
	for _, w := range []string{":12 multi-line parameter definition $MULTI", ":14 conditional line @node1", ":15 conditional line @node1"} {
		if !strings.Contains(joined, w) {
			t.Errorf("skipped lacks %q:\n%s", w, joined)
		}
	}

	cfg, _, err = parseString(t, "vrrp_instance X {\n@node1 priority 150\n@^node1 priority 100\n}\n", ParseOptions{ConfigID: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := dump(cfg.Nodes, ""); got != "vrrp_instance [X] @keepalived.conf:01\n  priority [150] @keepalived.conf:02\n" {
		t.Errorf("config-id node1:\n%s", got)
	}
}

func TestScriptArgv(t *testing.T) {
	tests := []struct {
		line      string
		argv      []string
		why, warn string
	}{
		{line: "/etc/keepalived/check.sh", argv: []string{"/etc/keepalived/check.sh"}},
		{line: "/usr/bin/timeout 1.9 /etc/check 'two words'", argv: []string{"/usr/bin/timeout", "1.9", "/etc/check", "two words"}},
		{line: "killall -0 haproxy", why: "bare name"},
		{line: "scripts/check.sh", why: "relative path"},
		{line: "/usr/bin/curl -sf http://127.0.0.1/ || exit 1", argv: []string{"/usr/bin/curl", "-sf", "http://127.0.0.1/", "||", "exit", "1"}, warn: "shell syntax"},
		{line: "</dev/tcp/127.0.0.1/6443", argv: []string{"/bin/sh", "-c", "</dev/tcp/127.0.0.1/6443"}, warn: "bash"},
		{line: "< /run/ok", argv: []string{"/bin/sh", "-c", "< /run/ok"}},
		{line: "  ", why: "empty"},
	}
	for _, tt := range tests {
		argv, why, warn := scriptArgv(tt.line)
		if strings.Join(argv, "|") != strings.Join(tt.argv, "|") || !contains(why, tt.why) || !contains(warn, tt.warn) {
			t.Errorf("scriptArgv(%q) = %q, %q, %q; want %q, ~%q, ~%q", tt.line, argv, why, warn, tt.argv, tt.why, tt.warn)
		}
	}
}

// contains is strings.Contains, except that an empty want wants s empty.
func contains(s, want string) bool {
	if want == "" {
		return s == ""
	}
	return strings.Contains(s, want)
}
