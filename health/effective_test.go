package health

import "testing"

func TestEffective(t *testing.T) {
	st := func(name string, weight int, healthy bool, cause string) Status {
		return Status{Name: name, Weight: weight, Healthy: healthy, Cause: cause}
	}
	for _, tc := range []struct {
		name      string
		base      uint8
		sts       []Status
		wantPrio  uint8
		wantFault string
	}{
		{name: "no trackers", base: 100, wantPrio: 100},
		{name: "penalty healthy", base: 100, sts: []Status{st("api", -50, true, "")}, wantPrio: 100},
		{name: "penalty failing", base: 100, sts: []Status{st("api", -50, false, "x")}, wantPrio: 50},
		{name: "bonus healthy", base: 100, sts: []Status{st("api", 20, true, "")}, wantPrio: 120},
		{name: "bonus failing", base: 100, sts: []Status{st("api", 20, false, "x")}, wantPrio: 100},
		{name: "sum", base: 100, sts: []Status{
			st("api", -30, false, ""), st("etcd", -20, false, ""), st("uplink", 15, true, ""), st("drain", -254, true, ""),
		}, wantPrio: 65},
		{name: "clamped at 254", base: 200, sts: []Status{st("a", 54, true, ""), st("b", 1, true, "")}, wantPrio: 254},
		{name: "clamped at 254 from far", base: 254, sts: []Status{st("a", 254, true, ""), st("b", 254, true, "")}, wantPrio: 254},
		{name: "clamped at 1", base: 10, sts: []Status{st("api", -50, false, "")}, wantPrio: 1},
		{name: "drain to the bottom", base: 254, sts: []Status{st("drain", -254, false, "")}, wantPrio: 1},
		{name: "never 0", base: 0, wantPrio: 1},
		{name: "never 255", base: 255, wantPrio: 254},
		{name: "weight 0 healthy", base: 100, sts: []Status{st("api", 0, true, "")}, wantPrio: 100},
		{name: "weight 0 failing", base: 100, sts: []Status{st("api", 0, false, "GET https://127.0.0.1:6443/readyz: timeout after 1s")},
			wantPrio: 100, wantFault: "tracker api failing: GET https://127.0.0.1:6443/readyz: timeout after 1s"},
		{name: "weight 0 failing without cause", base: 100, sts: []Status{st("api", 0, false, "")},
			wantPrio: 100, wantFault: "tracker api failing"},
		{name: "two faults and a penalty", base: 100, sts: []Status{
			st("api", 0, false, "exit status 2"), st("uplink", -40, false, ""), st("etcd", 0, true, ""), st("drain", 0, false, "/etc/vipd/drain exists"),
		}, wantPrio: 60, wantFault: "tracker api failing: exit status 2; tracker drain failing: /etc/vipd/drain exists"},
		// The contribution follows from Weight and Healthy, whatever the
		// Status says.
		{name: "stale contribution ignored", base: 100, sts: []Status{{Name: "api", Weight: -50, Contribution: -50, Healthy: true}}, wantPrio: 100},
	} {
		prio, fault := Effective(tc.base, tc.sts)
		if prio != tc.wantPrio || fault != tc.wantFault {
			t.Errorf("%s: Effective(%d, ...) = %d, %q; want %d, %q", tc.name, tc.base, prio, fault, tc.wantPrio, tc.wantFault)
		}
	}
}
