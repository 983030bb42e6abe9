// Package metrics exposes vipd's state to Prometheus: one registry of its
// own (never the global one), served over HTTP at /metrics.
//
// Most values already live in the daemon as the status snapshot the control
// socket serves (control.InstanceStatus). Those are read from the snapshot
// on every scrape by a custom Collector and exported as const metrics, so
// the daemon's hot paths pay nothing for them. Only what the snapshot does
// not carry is fed by events: state transitions, tracker check durations
// and ARP address conflicts.
//
// Every per-instance series has a "vrrp_instance" label, the configured name
// (not "instance", which Prometheus gives the scraped host):
//
//	vipd_build_info{version,commit,goversion}               1 (no vrrp_instance)
//	vipd_instance_info{vrrp_instance,interface,vrid}        1
//	vipd_instance_state{vrrp_instance,state}                1 for the current state, 0 for the others
//	vipd_transitions_total{vrrp_instance,from,to}           event-fed
//	vipd_priority_base{vrrp_instance}                       configured priority
//	vipd_priority_effective{vrrp_instance}                  advertised priority, after trackers
//	vipd_master_priority_seen{vrrp_instance}                the Master's priority; absent until one is heard
//	vipd_adverts_sent_total{vrrp_instance}
//	vipd_adverts_received_total{vrrp_instance}
//	vipd_adverts_dropped_total{vrrp_instance,reason}
//	vipd_garp_sent_total{vrrp_instance}
//	vipd_tracker_healthy{vrrp_instance,tracker}             1 healthy, 0 failing
//	vipd_tracker_check_duration_seconds{vrrp_instance,tracker} histogram, event-fed
//	vipd_tracker_check_failures_total{vrrp_instance,tracker} event-fed
//	vipd_drained{vrrp_instance}                             1 while drained
//	vipd_vip_held{vrrp_instance,vip}                        per address: 1 while it is on the interface, else 0
//	vipd_last_transition_timestamp_seconds{vrrp_instance}   when the current state was entered
//	vipd_address_conflicts_total{vrrp_instance}             event-fed
//	vipd_interface_adverts_dropped_total{interface,reason}   adverts no instance claimed
//
// plus the Go runtime and process collectors (go_*, process_*) and
// promhttp's own promhttp_metric_handler_* series.
//
// # Series that exist before their first event
//
// PromQL's increase() and rate() need two samples of a series: a counter
// that first appears already at 1 shows no increase, so an alert on the
// first VRID collision or the first failover would never fire. The counters
// that alerts watch are therefore exported at 0 before anything happens:
//
//   - vipd_adverts_dropped_total has a series for every reason vrrp knows
//     (vrrp.DropReasons), although the status lists only non-zero reasons;
//     a reason the status gives that vrrp does not list is exported as well.
//   - vipd_transitions_total has a series for every ordered pair of the four
//     states, and vipd_address_conflicts_total one, for each instance in
//     the snapshot.
//   - vipd_tracker_check_failures_total has a series for every tracker in
//     the snapshot.
//
// # Series of what a reload removed
//
// The snapshot says which instances and trackers exist. The series of an
// instance or tracker that a reload removed go with it at the next scrape,
// the event-fed ones too. Events of an instance that no snapshot has
// listed (an instance a reload is adding, or an event that raced a
// removal) are exported for one scrape and deleted at the second if it is
// still not listed. An instance added back starts its counters from zero,
// as after a restart; increase() and rate() take that as a counter reset.
//
// # Alerts and a dashboard
//
// alerts.yml in this directory is a Prometheus rule file for these metrics
// (the packages install it as /usr/share/vipd/alerts.yml), with unit tests
// for promtool in testdata/alerts_test.yml; packaging/grafana/vipd.json is
// a Grafana dashboard. Tests check both against what this package exports.
package metrics
