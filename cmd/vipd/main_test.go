package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vipd.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodConfig = `[global]
socket = "/run/vipd/test.sock"

[[instance]]
name = "k8s-api"
interface = "eth0"
vrid = 51
priority = 150
vips = ["198.51.100.10"]
`

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantCode int
		wantOut  string   // on stdout, with FILE replaced by the path
		wantErr  []string // lines on stderr, with FILE replaced by the path
	}{
		{name: "ok", body: goodConfig, wantCode: 0, wantOut: "FILE: OK\n"},
		{
			name:     "the reference config",
			body:     mustRead(t, "../../packaging/vipd.toml"),
			wantCode: 0, wantOut: "FILE: OK\n",
		},
		{
			name:     "several problems with their lines",
			body:     strings.Replace(strings.Replace(goodConfig, "vrid = 51", "vrid = 300", 1), "priority = 150", "priorty = 150", 1),
			wantCode: 1,
			wantErr: []string{
				`FILE:7: instance "k8s-api": vrid 300 out of range 1..255`,
				`FILE:8: instance "k8s-api": unknown key "priorty" (did you mean "priority"?)`,
			},
		},
		{
			name:     "syntax error",
			body:     "[[instance]\nname = 1\n",
			wantCode: 1,
			wantErr:  []string{"FILE:1: "},
		},
		{
			name:     "bad duration",
			body:     goodConfig + "advert_interval = \"1 second\"\n",
			wantCode: 1,
			wantErr:  []string{"FILE:10: "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			var stdout, stderr bytes.Buffer
			code := run([]string{"check", "--config", path}, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if want := strings.ReplaceAll(tt.wantOut, "FILE", path); stdout.String() != want {
				t.Errorf("stdout %q, want %q", stdout.String(), want)
			}
			for _, w := range tt.wantErr {
				if w = strings.ReplaceAll(w, "FILE", path); !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

func TestCheckMissingFile(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", "--config", filepath.Join(t.TempDir(), "none.toml")}, &stdout, &stderr); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "none.toml") {
		t.Errorf("stderr %q does not name the file", stderr.String())
	}
}

func TestRunRefusesBadConfigWithExConfig(t *testing.T) {
	path := writeConfig(t, strings.Replace(goodConfig, "vrid = 51", "vrid = 0", 1))
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--config", path}, &stdout, &stderr); code != exitConfig {
		t.Errorf("exit %d, want %d (EX_CONFIG)", code, exitConfig)
	}
	if !strings.Contains(stderr.String(), path+":7:") {
		t.Errorf("stderr lacks the line:\n%s", stderr.String())
	}
}

func TestVersionAndUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "vipd ") || !strings.Contains(stdout.String(), "go1.") {
		t.Errorf("version: %d %q", code, stdout.String())
	}
	if code := run([]string{"frobnicate"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "unknown command") {
		t.Errorf("unknown command: %d %q", code, stderr.String())
	}
	if code := run(nil, &stdout, &stderr); code != 2 {
		t.Errorf("no command: %d", code)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
