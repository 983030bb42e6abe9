package metrics

import (
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/vrrp"
)

// fixture is two instances: k8s-api is Master with drops and a failing
// tracker; ingress is a drained Backup that has heard no Master yet and was
// given a drop reason vrrp does not know.
func fixture() []control.InstanceStatus {
	local := netip.MustParseAddr("198.51.100.11")
	return []control.InstanceStatus{
		{
			Name: "k8s-api", Interface: "eth0", VRID: 51, LocalAddress: local,
			State: control.StateMaster,
			Since: time.Date(2026, 11, 29, 21, 41, 46, 558_000_000, time.UTC),
			Priority: control.Priority{Base: 100, Effective: 80, Parts: []control.PriorityPart{
				{Tracker: "apiserver", Healthy: false, Contribution: -20},
			}},
			Master:   control.Master{Address: local, Priority: 80},
			VIPs:     []netip.Prefix{netip.MustParsePrefix("192.0.2.10/32"), netip.MustParsePrefix("192.0.2.11/32")},
			VIPsHeld: true,
			Trackers: []control.Tracker{
				{Name: "apiserver", Type: "http", Healthy: false, Weight: -20},
				{Name: "drain-file", Type: "file", Healthy: true},
			},
			Counters: control.Counters{
				AdvertsSent: 10921, AdvertsReceived: 40, GARPSent: 5,
				Drops: map[string]uint64{"ttl": 3, "address_list": 12},
			},
		},
		{
			Name: "ingress", Interface: "eth1", VRID: 52, LocalAddress: local,
			State:    control.StateBackup,
			Priority: control.Priority{Base: 110, Effective: 110},
			Drained:  true,
			VIPs:     []netip.Prefix{netip.MustParsePrefix("192.0.2.20/32")},
			Counters: control.Counters{Drops: map[string]uint64{"from_the_future": 7}},
		},
	}
}

type labels map[string]string

// scrape serves one GET /metrics from h and parses the text format.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return fams
}

// find returns the series of family name whose labels are exactly want.
func find(fams map[string]*dto.MetricFamily, name string, want labels) (*dto.Metric, bool) {
	f, ok := fams[name]
	if !ok {
		return nil, false
	}
	for _, m := range f.GetMetric() {
		got := labels{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if cmp.Equal(got, want) {
			return m, true
		}
	}
	return nil, false
}

// value returns the value of a gauge or counter series, failing the test
// when it is missing.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, l labels) float64 {
	t.Helper()
	m, ok := find(fams, name, l)
	if !ok {
		t.Fatalf("no series %s%v", name, l)
	}
	switch fams[name].GetType() {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	}
	t.Fatalf("%s is a %v", name, fams[name].GetType())
	return 0
}

func TestSnapshot(t *testing.T) {
	fams := scrape(t, New(fixture).Handler())
	api := labels{"vrrp_instance": "k8s-api"}
	ing := labels{"vrrp_instance": "ingress"}
	with := func(l labels, k, v string) labels {
		out := labels{k: v}
		for k, v := range l {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name   string
		typ    dto.MetricType
		labels labels
		want   float64
	}{
		{"vipd_instance_info", dto.MetricType_GAUGE, labels{"vrrp_instance": "k8s-api", "interface": "eth0", "vrid": "51"}, 1},
		{"vipd_instance_info", dto.MetricType_GAUGE, labels{"vrrp_instance": "ingress", "interface": "eth1", "vrid": "52"}, 1},
		{"vipd_priority_base", dto.MetricType_GAUGE, api, 100},
		{"vipd_priority_effective", dto.MetricType_GAUGE, api, 80},
		{"vipd_priority_base", dto.MetricType_GAUGE, ing, 110},
		{"vipd_priority_effective", dto.MetricType_GAUGE, ing, 110},
		{"vipd_master_priority_seen", dto.MetricType_GAUGE, api, 80},
		{"vipd_adverts_sent_total", dto.MetricType_COUNTER, api, 10921},
		{"vipd_adverts_received_total", dto.MetricType_COUNTER, api, 40},
		{"vipd_garp_sent_total", dto.MetricType_COUNTER, api, 5},
		{"vipd_adverts_sent_total", dto.MetricType_COUNTER, ing, 0},
		{"vipd_adverts_dropped_total", dto.MetricType_COUNTER, with(api, "reason", "ttl"), 3},
		{"vipd_adverts_dropped_total", dto.MetricType_COUNTER, with(api, "reason", "address_list"), 12},
		// Not in the status, exported at 0 so increase() sees the first.
		{"vipd_adverts_dropped_total", dto.MetricType_COUNTER, with(api, "reason", "vrid"), 0},
		{"vipd_adverts_dropped_total", dto.MetricType_COUNTER, with(ing, "reason", "address_list"), 0},
		// Unknown to vrrp, passed through.
		{"vipd_adverts_dropped_total", dto.MetricType_COUNTER, with(ing, "reason", "from_the_future"), 7},
		{"vipd_tracker_healthy", dto.MetricType_GAUGE, with(api, "tracker", "apiserver"), 0},
		{"vipd_tracker_healthy", dto.MetricType_GAUGE, with(api, "tracker", "drain-file"), 1},
		{"vipd_drained", dto.MetricType_GAUGE, api, 0},
		{"vipd_drained", dto.MetricType_GAUGE, ing, 1},
		{"vipd_vip_held", dto.MetricType_GAUGE, with(api, "vip", "192.0.2.10"), 1},
		{"vipd_vip_held", dto.MetricType_GAUGE, with(api, "vip", "192.0.2.11"), 1},
		{"vipd_vip_held", dto.MetricType_GAUGE, with(ing, "vip", "192.0.2.20"), 0},
		{"vipd_last_transition_timestamp_seconds", dto.MetricType_GAUGE, api, 1795988506.558},
		{"vipd_address_conflicts_total", dto.MetricType_COUNTER, api, 0},
		{"vipd_address_conflicts_total", dto.MetricType_COUNTER, ing, 0},
	}
	for _, tt := range tests {
		if got := fams[tt.name].GetType(); got != tt.typ {
			t.Errorf("%s is a %v, want %v", tt.name, got, tt.typ)
		}
		if got := value(t, fams, tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}

	// A Backup that has heard no Master has no Master priority, rather
	// than one of 0, which would mean a Master that resigned.
	if _, ok := find(fams, "vipd_master_priority_seen", ing); ok {
		t.Error("vipd_master_priority_seen for an instance that has heard no Master")
	}
	if got, want := len(fams["vipd_adverts_dropped_total"].GetMetric()), 2*len(vrrp.DropReasons())+1; got != want {
		t.Errorf("%d vipd_adverts_dropped_total series, want %d", got, want)
	}
	if got := len(fams["vipd_tracker_healthy"].GetMetric()); got != 2 {
		t.Errorf("%d vipd_tracker_healthy series, want 2", got)
	}
	if got := len(fams["vipd_vip_held"].GetMetric()); got != 3 {
		t.Errorf("%d vipd_vip_held series, want one per address, 3", got)
	}
	// An instance that has not entered a state yet has no time for it.
	if _, ok := find(fams, "vipd_last_transition_timestamp_seconds", ing); ok {
		t.Error("vipd_last_transition_timestamp_seconds for an instance without Since")
	}
}

func TestInstanceState(t *testing.T) {
	sts := fixture()
	sts = append(sts,
		control.InstanceStatus{Name: "db", State: control.StateFault},
		control.InstanceStatus{Name: "spare", State: control.StateInitialize},
		control.InstanceStatus{Name: "odd", State: "RESIGNING"},
	)
	fams := scrape(t, New(func() []control.InstanceStatus { return sts }).Handler())
	if got := fams["vipd_instance_state"].GetType(); got != dto.MetricType_GAUGE {
		t.Fatalf("vipd_instance_state is a %v", got)
	}
	for _, st := range sts {
		got := map[string]float64{}
		for _, m := range fams["vipd_instance_state"].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["vrrp_instance"] == st.Name {
				got[l["state"]] = m.GetGauge().GetValue()
			}
		}
		want := map[string]float64{"INITIALIZE": 0, "BACKUP": 0, "MASTER": 0, "FAULT": 0}
		want[string(st.State)] = 1 // a state unknown here is added, not hidden
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (%s) vipd_instance_state (-want +got):\n%s", st.Name, st.State, diff)
		}
	}
}

func TestTransitions(t *testing.T) {
	m := New(fixture)
	m.Transition("k8s-api", "INITIALIZE", "BACKUP")
	m.Transition("k8s-api", "BACKUP", "MASTER")
	m.Transition("k8s-api", "MASTER", "BACKUP")
	m.Transition("k8s-api", "BACKUP", "MASTER")
	m.Transition("ingress", "INITIALIZE", "BACKUP")
	m.Transition("gone", "BACKUP", "MASTER")  // an instance a reload removed
	m.Transition("k8s-api", "BACKUP", "\xff") // not UTF-8: dropped, no panic

	fams := scrape(t, m.Handler())
	const name = "vipd_transitions_total"
	if got := fams[name].GetType(); got != dto.MetricType_COUNTER {
		t.Fatalf("%s is a %v", name, got)
	}
	for _, tt := range []struct {
		instance, from, to string
		want               float64
	}{
		{"k8s-api", "INITIALIZE", "BACKUP", 1},
		{"k8s-api", "BACKUP", "MASTER", 2},
		{"k8s-api", "MASTER", "BACKUP", 1},
		{"k8s-api", "BACKUP", "FAULT", 0},
		{"ingress", "INITIALIZE", "BACKUP", 1},
		// Exists before the first failover, so increase() sees it.
		{"ingress", "BACKUP", "MASTER", 0},
		{"gone", "BACKUP", "MASTER", 1},
	} {
		l := labels{"vrrp_instance": tt.instance, "from": tt.from, "to": tt.to}
		if got := value(t, fams, name, l); got != tt.want {
			t.Errorf("%s%v = %v, want %v", name, l, got, tt.want)
		}
	}
	// Every ordered pair of the 4 states for the 2 instances in the
	// snapshot, and the one pair counted for "gone".
	if got, want := len(fams[name].GetMetric()), 2*4*3+1; got != want {
		t.Errorf("%d %s series, want %d", got, name, want)
	}
}

func TestTrackerCheck(t *testing.T) {
	m := New(fixture)
	m.TrackerCheck("k8s-api", "apiserver", 4*time.Millisecond, true)
	m.TrackerCheck("k8s-api", "apiserver", 300*time.Millisecond, true)
	m.TrackerCheck("k8s-api", "apiserver", 2*time.Second, false)
	m.TrackerCheck("k8s-api", "drain-file", 50*time.Microsecond, true)
	m.TrackerCheck("ingress", "nginx", 20*time.Second, false)

	fams := scrape(t, m.Handler())
	const name = "vipd_tracker_check_duration_seconds"
	if got := fams[name].GetType(); got != dto.MetricType_HISTOGRAM {
		t.Fatalf("%s is a %v", name, got)
	}
	series, ok := find(fams, name, labels{"vrrp_instance": "k8s-api", "tracker": "apiserver"})
	if !ok {
		t.Fatalf("no %s for k8s-api/apiserver", name)
	}
	h := series.GetHistogram()
	if h.GetSampleCount() != 3 {
		t.Errorf("sample count %d, want 3", h.GetSampleCount())
	}
	if sum := h.GetSampleSum(); math.Abs(sum-2.304) > 1e-9 {
		t.Errorf("sample sum %v, want 2.304", sum)
	}
	got := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		got[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	want := map[float64]uint64{
		0.001: 0, 0.0025: 0, 0.005: 1, 0.01: 1, 0.025: 1, 0.05: 1, 0.1: 1,
		0.25: 1, 0.5: 2, 1: 2, 2.5: 3, 5: 3, 10: 3, math.Inf(1): 3,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cumulative buckets (-want +got):\n%s", diff)
	}

	fast, _ := find(fams, name, labels{"vrrp_instance": "k8s-api", "tracker": "drain-file"})
	if n := fast.GetHistogram().GetBucket()[0].GetCumulativeCount(); n != 1 {
		t.Errorf("a 50µs check is not in the first bucket: %d", n)
	}
	slow, _ := find(fams, name, labels{"vrrp_instance": "ingress", "tracker": "nginx"})
	if n := slow.GetHistogram().GetBucket()[len(checkBuckets())-1].GetCumulativeCount(); n != 0 {
		t.Errorf("a 20s check is in the 10s bucket: %d", n)
	}

	for _, tt := range []struct {
		instance, tracker string
		want              float64
	}{
		{"k8s-api", "apiserver", 1},
		{"k8s-api", "drain-file", 0}, // exists at 0 from its first check
		{"ingress", "nginx", 1},
	} {
		l := labels{"vrrp_instance": tt.instance, "tracker": tt.tracker}
		if got := value(t, fams, "vipd_tracker_check_failures_total", l); got != tt.want {
			t.Errorf("vipd_tracker_check_failures_total%v = %v, want %v", l, got, tt.want)
		}
	}
}

func TestConflict(t *testing.T) {
	m := New(fixture)
	m.Conflict("k8s-api")
	m.Conflict("k8s-api")
	fams := scrape(t, m.Handler())
	for instance, want := range map[string]float64{"k8s-api": 2, "ingress": 0} {
		if got := value(t, fams, "vipd_address_conflicts_total", labels{"vrrp_instance": instance}); got != want {
			t.Errorf("vipd_address_conflicts_total{instance=%q} = %v, want %v", instance, got, want)
		}
	}
}

func TestRuntimeCollectors(t *testing.T) {
	fams := scrape(t, New(nil).Handler())
	want := []string{"go_goroutines", "go_info", "go_memstats_alloc_bytes", "go_gc_duration_seconds"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_cpu_seconds_total", "process_open_fds", "process_start_time_seconds")
	}
	for _, name := range want {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	// No instances: no per-instance series, only the build's.
	for name := range fams {
		if strings.HasPrefix(name, "vipd_") && name != "vipd_build_info" {
			t.Errorf("%s with no instances", name)
		}
	}
}

// TestOwnRegistry checks that nothing is registered globally: two Metrics
// coexist, and the default registry knows none of vipd's metrics.
func TestOwnRegistry(t *testing.T) {
	a, b := New(fixture), New(fixture)
	a.Transition("k8s-api", "BACKUP", "MASTER")
	got := value(t, scrape(t, b.Handler()), "vipd_transitions_total",
		labels{"vrrp_instance": "k8s-api", "from": "BACKUP", "to": "MASTER"})
	if got != 0 {
		t.Errorf("a transition counted in a shows in b: %v", got)
	}
	fams, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "vipd_") {
			t.Errorf("%s is in the default registry", f.GetName())
		}
	}
}

// TestBadInstanceName checks that one instance that cannot be exported
// does not cost the others their metrics.
func TestBadInstanceName(t *testing.T) {
	sts := append(fixture(), control.InstanceStatus{Name: "bad\xff", State: control.StateBackup})
	m := New(func() []control.InstanceStatus { return sts })
	m.Conflict("bad\xff")
	m.TrackerCheck("bad\xff", "t", time.Second, false)
	fams := scrape(t, m.Handler())
	if got := value(t, fams, "vipd_priority_base", labels{"vrrp_instance": "k8s-api"}); got != 100 {
		t.Errorf("vipd_priority_base{instance=k8s-api} = %v, want 100", got)
	}
	// The error is counted after the scrape that met it was gathered.
	fams = scrape(t, m.Handler())
	if got := value(t, fams, "promhttp_metric_handler_errors_total", labels{"cause": "gathering"}); got != 1 {
		t.Errorf("promhttp_metric_handler_errors_total{cause=gathering} = %v, want 1", got)
	}
}

// TestConcurrent scrapes while events arrive; run with -race.
func TestConcurrent(t *testing.T) {
	m := New(fixture)
	const n = 200
	var wg sync.WaitGroup
	wg.Go(func() {
		for range n {
			m.Transition("k8s-api", "BACKUP", "MASTER")
			m.TrackerCheck("k8s-api", "apiserver", time.Millisecond, false)
			m.Conflict("ingress")
		}
	})
	for range 2 {
		wg.Go(func() {
			for range 5 {
				rec := httptest.NewRecorder()
				m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK {
					t.Errorf("GET /metrics: %d", rec.Code)
				}
			}
		})
	}
	wg.Wait()
	fams := scrape(t, m.Handler())
	if got := value(t, fams, "vipd_address_conflicts_total", labels{"vrrp_instance": "ingress"}); got != n {
		t.Errorf("vipd_address_conflicts_total{instance=ingress} = %v, want %d", got, n)
	}
}

func TestBuildInfo(t *testing.T) {
	for _, tt := range []struct {
		name            string
		opts            []Option
		version, commit string
	}{
		{"given", []Option{WithBuildInfo("v0.2.0", "1a2b3c4")}, "v0.2.0", "1a2b3c4"},
		{"not given", nil, "unknown", "unknown"},
		{"empty", []Option{WithBuildInfo("", "")}, "unknown", "unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fams := scrape(t, New(nil, tt.opts...).Handler())
			l := labels{"version": tt.version, "commit": tt.commit, "goversion": runtime.Version()}
			if got := value(t, fams, "vipd_build_info", l); got != 1 {
				t.Errorf("vipd_build_info%v = %v, want 1", l, got)
			}
			if n := len(fams["vipd_build_info"].GetMetric()); n != 1 {
				t.Errorf("%d vipd_build_info series, want 1", n)
			}
		})
	}
}

// seriesOf returns the label sets of family name that have vrrp_instance
// instance.
func seriesOf(fams map[string]*dto.MetricFamily, name, instance string) []labels {
	var out []labels
	for _, m := range fams[name].GetMetric() {
		l := labels{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["vrrp_instance"] == instance {
			out = append(out, l)
		}
	}
	return out
}

// eventFed are the families fed by events, which the snapshot does not
// carry.
var eventFed = []string{
	"vipd_transitions_total", "vipd_address_conflicts_total",
	"vipd_tracker_check_duration_seconds", "vipd_tracker_check_failures_total",
}

// TestReloadRemovesSeries: after a reload removed an instance, or a tracker
// of one that stays, a scrape shows none of their series, the event-fed
// ones included, and the others keep their values.
func TestReloadRemovesSeries(t *testing.T) {
	var mu sync.Mutex
	sts := fixture()
	m := New(func() []control.InstanceStatus {
		mu.Lock()
		defer mu.Unlock()
		return sts
	})
	m.Transition("ingress", "INITIALIZE", "BACKUP")
	m.Conflict("ingress")
	m.TrackerCheck("k8s-api", "apiserver", time.Millisecond, false)
	m.TrackerCheck("k8s-api", "drain-file", time.Millisecond, true)
	m.Transition("k8s-api", "BACKUP", "MASTER")

	fams := scrape(t, m.Handler())
	for _, name := range eventFed {
		if len(seriesOf(fams, name, "k8s-api")) == 0 {
			t.Fatalf("before the reload: no %s for k8s-api", name)
		}
	}
	if len(seriesOf(fams, "vipd_transitions_total", "ingress")) == 0 {
		t.Fatal("before the reload: no vipd_transitions_total for ingress")
	}

	// The reload: ingress goes, and k8s-api loses its drain-file tracker.
	mu.Lock()
	sts = fixture()[:1]
	sts[0].Trackers = sts[0].Trackers[:1]
	mu.Unlock()

	fams = scrape(t, m.Handler())
	for name, f := range fams {
		if got := seriesOf(fams, name, "ingress"); len(got) > 0 {
			t.Errorf("after the reload: %s still has %d series of the removed instance: %v", name, len(got), got[0])
		}
		for _, mt := range f.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "tracker" && lp.GetValue() == "drain-file" {
					t.Errorf("after the reload: %s still has the removed tracker drain-file", name)
				}
			}
		}
	}
	api := labels{"vrrp_instance": "k8s-api"}
	if got := value(t, fams, "vipd_transitions_total", labels{"vrrp_instance": "k8s-api", "from": "BACKUP", "to": "MASTER"}); got != 1 {
		t.Errorf("k8s-api's BACKUP -> MASTER after the reload = %v, want 1", got)
	}
	if got := value(t, fams, "vipd_tracker_check_failures_total", labels{"vrrp_instance": "k8s-api", "tracker": "apiserver"}); got != 1 {
		t.Errorf("k8s-api's apiserver failures after the reload = %v, want 1", got)
	}
	if got := value(t, fams, "vipd_address_conflicts_total", api); got != 0 {
		t.Errorf("vipd_address_conflicts_total%v = %v, want 0", api, got)
	}

	// Added back, it starts from zero, as after a restart.
	mu.Lock()
	sts = fixture()
	mu.Unlock()
	fams = scrape(t, m.Handler())
	if got := value(t, fams, "vipd_address_conflicts_total", labels{"vrrp_instance": "ingress"}); got != 0 {
		t.Errorf("ingress added back: vipd_address_conflicts_total = %v, want 0", got)
	}
}

// TestUnlistedEventsExpire: events of an instance that no snapshot lists
// (it was removed before any scrape, or an event raced its removal) are
// exported for one scrape, in case a reload is adding it, then deleted.
func TestUnlistedEventsExpire(t *testing.T) {
	m := New(fixture)
	m.Transition("gone", "BACKUP", "MASTER")
	m.TrackerCheck("gone", "t", time.Millisecond, false)
	fams := scrape(t, m.Handler())
	if got := value(t, fams, "vipd_transitions_total", labels{"vrrp_instance": "gone", "from": "BACKUP", "to": "MASTER"}); got != 1 {
		t.Errorf("first scrape: vipd_transitions_total of gone = %v, want 1", got)
	}
	fams = scrape(t, m.Handler())
	for _, name := range eventFed {
		if got := seriesOf(fams, name, "gone"); len(got) > 0 {
			t.Errorf("second scrape: %s of an instance no snapshot lists: %v", name, got)
		}
	}
	// A new event brings it back for one scrape again.
	m.Conflict("gone")
	fams = scrape(t, m.Handler())
	if got := value(t, fams, "vipd_address_conflicts_total", labels{"vrrp_instance": "gone"}); got != 1 {
		t.Errorf("after a new event: vipd_address_conflicts_total of gone = %v, want 1", got)
	}
}

// TestListedLateKeepsEvents: an instance whose first events come before the
// snapshot lists it (a reload adding it) keeps them once it is listed.
func TestListedLateKeepsEvents(t *testing.T) {
	var mu sync.Mutex
	sts := fixture()[:1]
	m := New(func() []control.InstanceStatus {
		mu.Lock()
		defer mu.Unlock()
		return sts
	})
	m.Transition("ingress", "INITIALIZE", "BACKUP")
	scrape(t, m.Handler())
	mu.Lock()
	sts = fixture()
	mu.Unlock()
	for range 3 {
		fams := scrape(t, m.Handler())
		if got := value(t, fams, "vipd_transitions_total", labels{"vrrp_instance": "ingress", "from": "INITIALIZE", "to": "BACKUP"}); got != 1 {
			t.Fatalf("ingress INITIALIZE -> BACKUP = %v, want 1", got)
		}
	}
}

// The adverts no instance claimed are counted per interface and reason.
func TestInterfaceDrops(t *testing.T) {
	drops := map[string]map[string]uint64{"eth0": {"vrid": 7}, "eth1": {"too_short": 2}}
	fams := scrape(t, New(func() []control.InstanceStatus { return fixture() },
		WithInterfaceDrops(func() map[string]map[string]uint64 { return drops })).Handler())
	for _, tt := range []struct {
		l    labels
		want float64
	}{{labels{"interface": "eth0", "reason": "vrid"}, 7}, {labels{"interface": "eth1", "reason": "too_short"}, 2}} {
		if got := value(t, fams, "vipd_interface_adverts_dropped_total", tt.l); got != tt.want {
			t.Errorf("%v = %v, want %v", tt.l, got, tt.want)
		}
	}
}
