package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kaGood = `global_defs {
    router_id lb-1
}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 51
    priority 100
    virtual_ipaddress {
        192.0.2.10/24
    }
}
`

func TestImportKeepalived(t *testing.T) {
	partial := kaGood + "virtual_server 192.0.2.10 80 {\n}\n"
	tests := []struct {
		name     string
		body     string // the keepalived.conf; "" for none
		args     []string
		wantCode int
		wantOut  []string // on stdout
		wantErr  []string // on stderr, FILE replaced by the path
	}{
		{
			name: "converted", body: kaGood, wantCode: 0,
			wantOut: []string{`node_name = "lb-1"`, `vrid = 51`, `vips = ["192.0.2.10"]`, `version = 2`},
			wantErr: []string{"FILE:10: note: virtual_ipaddress 192.0.2.10/24 is converted to the host address 192.0.2.10"},
		},
		{
			name: "not everything converted", body: partial, wantCode: 1,
			wantOut: []string{`vrid = 51`, "# NOT CONVERTED"},
			wantErr: []string{"FILE:13: not converted: virtual_server 192.0.2.10 80: belongs to LVS", "pass --allow-partial"},
		},
		{
			name: "allow partial", body: partial, args: []string{"--allow-partial"}, wantCode: 0,
			wantOut: []string{`vrid = 51`},
			wantErr: []string{"FILE:13: not converted:", "converted in part"},
		},
		{
			name: "address owner", body: kaGood, args: []string{"--address-owner", "198.51.100.11"}, wantCode: 0,
			wantOut: []string{`address_owner = "198.51.100.11"`},
		},
		{name: "syntax error", body: "vrrp_instance VI_1 {\n", wantCode: 1, wantErr: []string{"FILE:1: the block opened at FILE:1 is not closed"}},
		{name: "no instance", body: "global_defs {\n}\n", wantCode: 1, wantErr: []string{"no vrrp_instance could be converted"}},
		{name: "missing file", wantCode: 1, wantErr: []string{"FILE"}},
		{name: "bad address owner", body: kaGood, args: []string{"--address-owner", "lb-2"}, wantCode: exitUsage, wantErr: []string{`--address-owner "lb-2" is not an IPv4 or IPv6 address`}},
		{name: "two files", body: kaGood, args: []string{"other.conf"}, wantCode: exitUsage, wantErr: []string{"unexpected argument", "converts one file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keepalived.conf")
			if tt.body != "" {
				if err := os.WriteFile(path, []byte(tt.body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := run(append(append([]string{"import-keepalived"}, tt.args...), path), &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tt.wantErr {
				if w = strings.ReplaceAll(w, "FILE", path); !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// The output of import-keepalived is a file vipd check accepts.
func TestImportKeepalivedOutputChecks(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "keepalived.conf"), filepath.Join(dir, "vipd.toml")
	if err := os.WriteFile(in, []byte(kaGood), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"import-keepalived", "--output", out, in}, &stdout, &stderr); code != 0 || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"check", out}, &stdout, &stderr); code != 0 {
		t.Errorf("vipd check of the output: exit %d\n%s", code, stderr.String())
	}
}

func TestImportKeepalivedUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"import-keepalived"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "name the keepalived.conf") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
