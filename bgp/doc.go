// Package bgp announces vipd's virtual IPs to routers over BGP-4 (RFC 4271),
// for clusters whose hosts share no L2 segment, where gratuitous ARP cannot
// move an address.
//
// Its one job is to keep, on every configured peer, exactly the host routes
// (/32, /128) the daemon asked for: [Speaker.Announce], [Speaker.Withdraw]
// and [Speaker.GracefulShutdown] (re-announce with the GRACEFUL_SHUTDOWN
// community of RFC 8326 before a withdraw) change the desired set, and the
// speaker, built on GoBGP (github.com/osrg/gobgp/v4) embedded as a library,
// advertises it with next hop self. When to announce is the daemon's
// policy, not this package's.
//
// vipd initiates every session (no port is opened unless
// [Config.ListenPort] is set); a peer that is down is retried by GoBGP's
// connect loop and reported by [Speaker.Peers] with its state and last
// error. Nothing from the routers is imported: vipd only originates.
package bgp
