// Command vipd-lab runs the lab of package lab from the command line.
//
//	vipd-lab demo  [--vipd PATH] [--daemon vipd|keepalived] [--config FILE] [--interval D]
//	vipd-lab bench [--vipd PATH] [--trials 10] [--intervals 1s,100ms,10ms]
//	               [--modes cut,kill,graceful] [--daemons vipd,keepalived] [--steady 60s] [--out results]
//	vipd-lab chaos [--vipd PATH] [--scenario NAME,...] [--daemons vipd,keepalived]
//	               [--quick | --scale F] [--out results] [--list]
//	vipd-lab bgp-bench [--vipd PATH] [--trials 3] [--faults graceful,link,silent] [--out results]
//	vipd-lab clean
//
// demo builds the lab with the embedded demo.toml (3 nodes, VRID 51,
// priorities 150/100/50, 1 s adverts), shows the election, the client
// reaching the VIP, a cut of the master's link with the takeover and the
// outage the client saw, then a graceful handover (SIGTERM), on a timeline
// in milliseconds since the start. bench measures both daemons and writes
// bench.txt, bench.json and bench.svg to --out. chaos runs the fault
// scenarios of issue 11 (loss, partitions, flaps, freezes, starvation, a
// malformed flood, restarts, manual deletes, foreign ARP claims) against
// each daemon and writes chaos.txt and chaos.json. bgp-bench measures the
// client's outage when the Master of an announce = "bgp" group behind FRR's
// bgpd stops, loses its link or is cut silently, per BGP timer setting, and
// writes bgp-bench.txt and bgp-bench.json. clean removes what a killed
// run left. All need root; everything is removed on exit, on Ctrl-C and on
// failure.
package main
