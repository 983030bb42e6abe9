// Package daemon runs vipd's virtual routers: for each configured instance
// it waits for the interface, opens its VRRP socket and ARP announcer, feeds
// the vrrp.Machine with packets, timers and link events, and carries out
// the machine's actions (adverts, addresses, gratuitous ARP).
//
// Every OS boundary is an interface in Env, so tests run the whole daemon
// against fakes; the real implementations live in netif, transport and arp.
package daemon
