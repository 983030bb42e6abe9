package ndp

import "golang.org/x/net/bpf"

// ndpFilter passes IPv6 frames carrying ICMPv6 Neighbor Solicitations or
// Advertisements right after the fixed header, and nothing else, so the
// monitor does not copy the host's IPv6 traffic to user space. The kernel
// has removed any VLAN tag before a packet socket's filter runs.
var ndpFilter = []bpf.Instruction{
	bpf.LoadAbsolute{Off: 12, Size: 2}, // EtherType
	bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0x86dd, SkipTrue: 6},
	bpf.LoadAbsolute{Off: 14 + 6, Size: 1}, // next header
	bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: protocolICMPv6, SkipTrue: 4},
	bpf.LoadAbsolute{Off: 14 + ipv6HeaderLen, Size: 1}, // ICMPv6 type
	bpf.JumpIf{Cond: bpf.JumpLessThan, Val: typeNeighborSolicitation, SkipTrue: 2},
	bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: typeNeighborAdvertisement, SkipTrue: 1},
	bpf.RetConstant{Val: readBuffer},
	bpf.RetConstant{Val: 0},
}
