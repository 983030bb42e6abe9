package bgp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A Speaker's sockets belong to the network namespace of the thread that
// opens them, and GoBGP opens them on goroutines of its own, so a test
// cannot run a speaker per namespace in one process. Each host's speaker
// runs in a child: the test binary itself, started through ip netns exec
// with helperEnv set, driven by one JSON request per line on stdin, one
// reply per line on stdout.

const helperEnv = "VIPD_BGP_TEST_SPEAKER"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(helperEnv); cfg != "" {
		os.Exit(speakerHelper(cfg))
	}
	os.Exit(m.Run())
}

type helperRequest struct {
	Op     string       `json:"op"` // announce, withdraw, gshut, peers, reconfigure
	VIP    netip.Prefix `json:"vip,omitzero"`
	Attrs  Attrs        `json:"attrs"`
	Config *Config      `json:"config,omitempty"`
}

type helperReply struct {
	Err         string       `json:"err,omitempty"`
	Peers       []PeerStatus `json:"peers,omitempty"`
	Established bool         `json:"established"`
}

func speakerHelper(cfgJSON string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var cfg Config
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		log.Error("helper config", "err", err)
		return 2
	}
	s, err := New(cfg, log)
	if err != nil {
		log.Error("helper new", "err", err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(ctx) }()
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req helperRequest
		var rep helperReply
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			rep.Err = err.Error()
		} else {
			switch req.Op {
			case "announce":
				err = s.Announce(ctx, req.VIP, req.Attrs)
			case "withdraw":
				err = s.Withdraw(ctx, req.VIP)
			case "gshut":
				err = s.GracefulShutdown(ctx, req.VIP)
			case "reconfigure":
				err = s.Reconfigure(ctx, *req.Config)
			case "stoprestart":
				s.StopForRestart()
			case "peers":
				err = nil
			default:
				err = fmt.Errorf("unknown op %q", req.Op)
			}
			if err != nil {
				rep.Err = err.Error()
			}
		}
		rep.Peers, rep.Established = s.Peers(), s.Established()
		if err := out.Encode(rep); err != nil {
			break
		}
	}
	cancel() // stdin closed: the test is done with this speaker
	if err := <-runErr; err != nil {
		log.Error("helper run", "err", err)
		return 1
	}
	return 0
}

// remoteSpeaker is a Speaker running in a child process in a namespace.
type remoteSpeaker struct {
	t       *testing.T
	cmd     *exec.Cmd
	mu      sync.Mutex
	stdin   *json.Encoder
	stdout  *bufio.Scanner
	logPath string
	done    chan struct{}
	stdinW  io.Closer
}

// startSpeaker runs a speaker with cfg in namespace ns; cleanup stops it.
func startSpeaker(t *testing.T, ns string, cfg Config) *remoteSpeaker {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &remoteSpeaker{t: t, logPath: filepath.Join(t.TempDir(), "speaker.log"), done: make(chan struct{})}
	logf, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command("ip", "netns", "exec", ns, exe)
	r.cmd.Env = append(os.Environ(), helperEnv+"="+string(b))
	r.cmd.Stderr = logf
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	w, err := r.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	go func() {
		_ = r.cmd.Wait()
		close(r.done)
	}()
	r.stdin, r.stdout, r.stdinW = json.NewEncoder(w), bufio.NewScanner(rd), w
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			b, _ := os.ReadFile(r.logPath)
			t.Logf("--- speaker log (%s) ---\n%s", ns, b)
		}
	})
	return r
}

// stop ends the speaker: with stdin closed the helper ends Run and exits.
func (r *remoteSpeaker) stop() {
	r.stdinW.Close()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	}
}

// signal sends sig to the speaker's process (ip netns exec execs it, so
// the child is the speaker itself).
func (r *remoteSpeaker) signal(sig syscall.Signal) {
	r.t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatal(err)
	}
}

func (r *remoteSpeaker) call(req helperRequest) (helperReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.stdin.Encode(req); err != nil {
		return helperReply{}, err
	}
	if !r.stdout.Scan() {
		return helperReply{}, fmt.Errorf("speaker exited: %v", r.stdout.Err())
	}
	var rep helperReply
	if err := json.Unmarshal(r.stdout.Bytes(), &rep); err != nil {
		return helperReply{}, err
	}
	if rep.Err != "" {
		return rep, errors.New(rep.Err)
	}
	return rep, nil
}

func (r *remoteSpeaker) must(req helperRequest) helperReply {
	r.t.Helper()
	rep, err := r.call(req)
	if err != nil {
		r.t.Fatalf("%s %v: %v", req.Op, req.VIP, err)
	}
	return rep
}

func (r *remoteSpeaker) announce(vip netip.Prefix, attrs Attrs) {
	r.t.Helper()
	r.must(helperRequest{Op: "announce", VIP: vip, Attrs: attrs})
}

func (r *remoteSpeaker) peers() helperReply {
	r.t.Helper()
	return r.must(helperRequest{Op: "peers"})
}

// waitPeer polls the speaker's view of peer until cond holds.
func (r *remoteSpeaker) waitPeer(peer netip.Addr, timeout time.Duration, cond func(PeerStatus) bool) PeerStatus {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	var last PeerStatus
	for {
		for _, p := range r.peers().Peers {
			if p.Address == peer {
				last = p
				if cond(p) {
					return p
				}
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("peer %s: condition not met within %s; last status %+v", peer, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
