package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"
	"github.com/google/go-cmp/cmp"
	"github.com/vipd/vipd/config"
)

// journalEntry is one entry a fake journal received.
type journalEntry struct {
	message  string
	priority journal.Priority
	fields   map[string]string
}

type fakeJournal struct {
	mu      sync.Mutex
	entries []journalEntry
	fail    bool
}

func (j *fakeJournal) send(message string, priority journal.Priority, fields map[string]string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail {
		return errors.New("journal gone")
	}
	j.entries = append(j.entries, journalEntry{message, priority, fields})
	return nil
}

func textFormat(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) }

func TestJournalPriorities(t *testing.T) {
	j := &fakeJournal{}
	var stream bytes.Buffer
	log := slog.New(newJournalHandler(j.send, &stream, slog.LevelDebug, textFormat))
	log.Error("e")
	log.Warn("w")
	log.Info("i")
	log.Debug("d")
	var got []journal.Priority
	for _, e := range j.entries {
		got = append(got, e.priority)
	}
	if diff := cmp.Diff([]journal.Priority{3, 4, 6, 7}, got); diff != "" {
		t.Errorf("priorities (-want +got):\n%s", diff)
	}
	if stream.Len() != 0 {
		t.Errorf("the stream got %q while the journal took every entry", stream.String())
	}
}

func TestJournalLevelFilters(t *testing.T) {
	j := &fakeJournal{}
	level := new(slog.LevelVar)
	level.Set(slog.LevelWarn)
	log := slog.New(newJournalHandler(j.send, io.Discard, level, textFormat))
	log.Info("hidden")
	log.Warn("shown")
	level.Set(slog.LevelDebug) // a reload changes it
	log.Debug("now shown")
	if len(j.entries) != 2 || !strings.Contains(j.entries[0].message, "shown") || !strings.Contains(j.entries[1].message, "now shown") {
		t.Errorf("entries %+v", j.entries)
	}
}

// The fields make `journalctl VIPD_INSTANCE=k8s-api` work; the message is
// the line the text handler writes without its time, as `journalctl -o cat`
// showed before.
func TestJournalFields(t *testing.T) {
	j := &fakeJournal{}
	log := slog.New(newJournalHandler(j.send, io.Discard, slog.LevelInfo, textFormat))
	in := log.With("instance", "k8s-api", "vrid", 51, "interface", "eth0")
	in.Warn("state changed", "from", "BACKUP", "to", "MASTER", "reason", "master_down",
		"error", errors.New("boom"), "peer-addr", "198.51.100.12",
		slog.Group("tracker", "name", "apiserver", "healthy", false))
	in.WithGroup("hook").Info("ran", "exit", 0, slog.Group("", "inline", "yes"))
	if len(j.entries) != 2 {
		t.Fatalf("%d entries", len(j.entries))
	}
	e := j.entries[0]
	wantMsg := `level=WARN msg="state changed" instance=k8s-api vrid=51 interface=eth0 from=BACKUP to=MASTER reason=master_down error=boom peer-addr=198.51.100.12 tracker.name=apiserver tracker.healthy=false`
	if e.message != wantMsg {
		t.Errorf("message\n got %q\nwant %q", e.message, wantMsg)
	}
	want := map[string]string{
		"VIPD_INSTANCE": "k8s-api", "VIPD_VRID": "51", "VIPD_INTERFACE": "eth0",
		"VIPD_FROM": "BACKUP", "VIPD_TO": "MASTER", "VIPD_REASON": "master_down",
		"VIPD_ERROR": "boom", "VIPD_PEER_ADDR": "198.51.100.12",
		"VIPD_TRACKER_NAME": "apiserver", "VIPD_TRACKER_HEALTHY": "false",
		"SYSLOG_IDENTIFIER": "vipd",
	}
	for k, v := range want {
		if e.fields[k] != v {
			t.Errorf("field %s = %q, want %q", k, e.fields[k], v)
		}
	}
	if !strings.HasSuffix(e.fields["CODE_FILE"], "journal_test.go") || e.fields["CODE_LINE"] == "" {
		t.Errorf("CODE_FILE %q, CODE_LINE %q: want the caller", e.fields["CODE_FILE"], e.fields["CODE_LINE"])
	}
	for k := range e.fields {
		if strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" || strings.HasPrefix(k, "_") {
			t.Errorf("field name %q is not one journald accepts", k)
		}
	}
	g := j.entries[1].fields
	if g["VIPD_INSTANCE"] != "k8s-api" || g["VIPD_HOOK_EXIT"] != "0" || g["VIPD_HOOK_INLINE"] != "yes" {
		t.Errorf("group fields: %v", g)
	}
	if m := j.entries[1].message; m != "level=INFO msg=ran instance=k8s-api vrid=51 interface=eth0 hook.exit=0 hook.inline=yes" {
		t.Errorf("group message %q", m)
	}
}

func TestJournalJSONMessage(t *testing.T) {
	j := &fakeJournal{}
	jsonFormat := func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) }
	slog.New(newJournalHandler(j.send, io.Discard, slog.LevelInfo, jsonFormat)).Info("hello", "instance", "a")
	if len(j.entries) != 1 || j.entries[0].message != `{"level":"INFO","msg":"hello","instance":"a"}` || j.entries[0].fields["VIPD_INSTANCE"] != "a" {
		t.Errorf("entries %+v", j.entries)
	}
}

// Without the journal's socket (or when it refuses an entry) the lines go
// to the stream with sd-daemon's <N> prefix, which journald reads as the
// priority.
func TestJournalStreamFallback(t *testing.T) {
	var stream bytes.Buffer
	log := slog.New(newJournalHandler(nil, &stream, slog.LevelDebug, textFormat)).With("instance", "k8s-api")
	log.Error("a second host holds the VIP", "vip", "192.0.2.10")
	log.Warn("tracker failing")
	log.Info("ready")
	log.Debug("detail", "text", "two\nlines")
	want := `<3>level=ERROR msg="a second host holds the VIP" instance=k8s-api vip=192.0.2.10
<4>level=WARN msg="tracker failing" instance=k8s-api
<6>level=INFO msg=ready instance=k8s-api
<7>level=DEBUG msg=detail instance=k8s-api text="two\nlines"
`
	if diff := cmp.Diff(want, stream.String()); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}

	j := &fakeJournal{fail: true}
	stream.Reset()
	slog.New(newJournalHandler(j.send, &stream, slog.LevelInfo, textFormat)).Warn("kept", "n", 1)
	if stream.String() != "<4>level=WARN msg=kept n=1\n" {
		t.Errorf("after a failed send the stream got %q", stream.String())
	}
}

func TestJournalFieldNames(t *testing.T) {
	for key, want := range map[string]string{
		"instance": "INSTANCE", "peer-addr": "PEER_ADDR", "a.b c": "A_B_C", "vrid2": "VRID2", "Zoë": "ZO__",
	} {
		if got := fieldName(key); got != want {
			t.Errorf("fieldName(%q) = %q, want %q", key, got, want)
		}
	}
	long := appendFields(nil, "VIPD_", slog.String(strings.Repeat("k", 100), "v"))
	if len(long) != 1 || len(long[0].name) != maxFieldName {
		t.Errorf("a long key: %+v", long)
	}
}

// Concurrent records must not mix their messages (the handler renders
// through one buffer).
func TestJournalConcurrent(t *testing.T) {
	j := &fakeJournal{}
	log := slog.New(newJournalHandler(j.send, io.Discard, slog.LevelInfo, textFormat))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				log.Info("m", "g", g, "i", i)
			}
		})
	}
	wg.Wait()
	if len(j.entries) != 400 {
		t.Fatalf("%d entries", len(j.entries))
	}
	for _, e := range j.entries {
		if want := fmt.Sprintf("level=INFO msg=m g=%s i=%s", e.fields["VIPD_G"], e.fields["VIPD_I"]); e.message != want {
			t.Errorf("message %q does not match its fields %q", e.message, want)
		}
	}
}

// On a terminal, or a stderr that is not the stream JOURNAL_STREAM names,
// the lines stay as log_format says, with their time.
func TestNewLoggerOutsideTheJournal(t *testing.T) {
	t.Setenv("JOURNAL_STREAM", "8:12345") // inherited, but not our stderr
	for format, want := range map[string]string{"text": "time=", "json": `{"time":`} {
		var b bytes.Buffer
		newLogger(&b, config.Global{LogFormat: format}, slog.LevelInfo).Info("hello", "instance", "a")
		if !strings.HasPrefix(b.String(), want) || !strings.Contains(b.String(), "hello") {
			t.Errorf("%s: %q", format, b.String())
		}
	}
	if stderrIsJournal() {
		t.Error("stderr taken for the journal stream with a JOURNAL_STREAM that names another file")
	}
}
