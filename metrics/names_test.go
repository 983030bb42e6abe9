package metrics

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Files outside the code that query the metrics.
const (
	alertsFile     = "alerts.yml"
	alertTestsFile = "testdata/alerts_test.yml"
	dashboardFile  = "../packaging/grafana/vipd.json"
)

// vipdName finds vipd's metric names in PromQL (or in any text).
var vipdName = regexp.MustCompile(`\bvipd_[a-zA-Z0-9_:]+`)

// exportedNames scrapes a Metrics built with the fixture and one event of
// each kind, so that every family has a series, and returns the names a
// query may use: each family's, and a histogram's _bucket, _sum and _count.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	m := New(fixture, WithBuildInfo("v0.0.0-test", "0000000"))
	m.Transition("k8s-api", "BACKUP", "MASTER")
	m.TrackerCheck("k8s-api", "apiserver", time.Millisecond, false)
	m.Conflict("k8s-api")
	names := map[string]bool{}
	for name, f := range scrape(t, m.Handler()) {
		names[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[name+suffix] = true
			}
		}
	}
	return names
}

// usedNames returns the vipd_ names in texts, sorted.
func usedNames(texts []string) []string {
	seen := map[string]bool{}
	for _, s := range texts {
		for _, n := range vipdName.FindAllString(s, -1) {
			seen[n] = true
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func checkNames(t *testing.T, file string, used []string, exported map[string]bool) {
	t.Helper()
	if len(used) == 0 {
		t.Fatalf("%s uses no vipd metric", file)
	}
	for _, n := range used {
		if !exported[n] {
			t.Errorf("%s uses %s, which vipd does not export", file, n)
		}
	}
}

// dashboard is the part of a Grafana dashboard that holds queries.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

// exprs returns the queries of p and the panels in it, by panel title.
func (p panel) exprs(out map[string][]string) {
	for _, t := range p.Targets {
		if t.Expr != "" {
			out[p.Title] = append(out[p.Title], t.Expr)
		}
	}
	for _, c := range p.Panels {
		c.exprs(out)
	}
}

func loadDashboard(t *testing.T) (dashboard, map[string][]string) {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	byPanel := map[string][]string{}
	for _, p := range d.Panels {
		p.exprs(byPanel)
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		// A variable's query is a string, or an object with one.
		var q struct {
			Query string `json:"query"`
		}
		var s string
		if err := json.Unmarshal(v.Query, &s); err == nil {
			q.Query = s
		} else if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("%s: variable %s: query %s: %v", dashboardFile, v.Name, v.Query, err)
		}
		byPanel["variable "+v.Name] = append(byPanel["variable "+v.Name], q.Query)
	}
	return d, byPanel
}

// TestDashboardMetrics checks every metric name the dashboard's queries use
// against what the package exports, and that it shows what an operator
// looks for: the owner, transitions, adverts, drops and trackers.
func TestDashboardMetrics(t *testing.T) {
	d, byPanel := loadDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("%s: title %q, uid %q: both are needed to import it", dashboardFile, d.Title, d.UID)
	}
	var all []string
	for title, exprs := range byPanel {
		if len(usedNames(exprs)) == 0 && !strings.HasPrefix(title, "variable ") {
			t.Errorf("panel %q queries no vipd metric: %q", title, exprs)
		}
		all = append(all, exprs...)
	}
	used := usedNames(all)
	checkNames(t, dashboardFile, used, exportedNames(t))
	shown := map[string]bool{}
	for _, n := range used {
		shown[n] = true
	}
	for _, want := range []string{
		"vipd_instance_state", "vipd_transitions_total", "vipd_adverts_sent_total",
		"vipd_adverts_received_total", "vipd_adverts_dropped_total", "vipd_tracker_healthy",
	} {
		if !shown[want] {
			t.Errorf("%s does not show %s", dashboardFile, want)
		}
	}
}

// TestAlertMetrics checks the metric names of the rule file and of its
// unit tests against what the package exports: a rule on a renamed metric
// would never fire, and promtool cannot know.
func TestAlertMetrics(t *testing.T) {
	exported := exportedNames(t)
	for _, file := range []string{alertsFile, alertTestsFile} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		checkNames(t, file, usedNames([]string{string(b)}), exported)
	}
}

// promtool finds promtool (Debian's prometheus package), or skips.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found (apt-get install prometheus; .ci/install-deps does): the rule file is not checked")
	}
	return p
}

// TestAlertRules loads the rule file as Prometheus does and runs its unit
// tests.
func TestAlertRules(t *testing.T) {
	p := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", alertsFile},
		{"test", "rules", alertTestsFile},
	} {
		out, err := exec.Command(p, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// TestAlertRulesCatchErrors makes sure the check above can fail: promtool
// refuses a rule file with a broken expression.
func TestAlertRulesCatchErrors(t *testing.T) {
	p := promtool(t)
	bad := filepath.Join(t.TempDir(), "bad.yml")
	rules := "groups:\n  - name: bad\n    rules:\n      - alert: Broken\n        expr: sum by (vrrp_instance (vipd_instance_state)\n"
	if err := os.WriteFile(bad, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(p, "check", "rules", bad).CombinedOutput(); err == nil {
		t.Errorf("promtool check rules accepted a broken expression:\n%s", out)
	}
}
