package lab

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// CleanStale removes what labs of dead processes left behind (a run that
// was SIGKILLed cannot clean up): namespaces named vipdlab-PID-* whose PID
// no longer runs, and every process inside them. Labs of live processes,
// including parallel runs, are left alone. It returns the names removed.
func CleanStale(log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		name := f[0]
		pid, ok := ownerPID(name)
		if !ok || pidAlive(pid) {
			continue
		}
		if ns, err := netns.GetFromName(name); err == nil {
			errs = append(errs, killNetnsProcs(ns))
			ns.Close()
		}
		if err := delNamedNetns(name); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("removed stale lab namespace", "name", name, "owner_pid", pid)
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// ownerPID parses vipdlab-PID-RANDOM-LABEL.
func ownerPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}

func pidAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
