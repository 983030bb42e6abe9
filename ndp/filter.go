package ndp

import (
	"encoding/binary"
	"net"
	"net/netip"

	"golang.org/x/net/bpf"
)

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

// Offsets in an Ethernet frame carrying an NDP message right after the
// fixed IPv6 header.
const (
	offEthSource = 6
	offIPv6Src   = 14 + 8
	offICMPType  = 14 + ipv6HeaderLen
	offNDTarget  = offICMPType + 8 // after type, code, checksum and 4 bytes
	// vipCheckLen is what claimFilter spends per VIP: four comparisons of
	// a word in scratch memory and the pass.
	vipCheckLen = 9
	// bpfMaxInstructions is the kernel's limit on a classic BPF program.
	bpfMaxInstructions = 4096
	// MaxFilterAddresses is the most VIPs the kernel filter compares;
	// with more, SetAddresses lets every Solicitation and Advertisement
	// through and the callers select, as before any SetAddresses.
	MaxFilterAddresses = (bpfMaxInstructions - 32) / vipCheckLen
)

// claimFilter passes the NDP messages of other hosts that can be a claim
// of one of vips, as Run reports them: an Advertisement whose target is
// one, a Solicitation whose source is one. The rest never reaches user
// space: a host asking where a VIP is (a client, our Master's probe for a
// second owner, a DAD probe from ::) and every message about other
// addresses, which on a busy IPv6 LAN is most of its NDP. The caller has
// made vips IPv6, unique and at most MaxFilterAddresses.
func claimFilter(own net.HardwareAddr, vips []netip.Addr) []bpf.Instruction {
	if len(vips) == 0 {
		return []bpf.Instruction{bpf.RetConstant{Val: 0}}
	}
	var ownHigh, ownLow uint32
	if len(own) == 6 {
		ownHigh, ownLow = binary.BigEndian.Uint32(own[:4]), uint32(binary.BigEndian.Uint16(own[4:]))
	}
	const (
		drop   = 12 // the shared "ret #0"
		target = 13 // an Advertisement: its target is the address
		source = 15 // a Solicitation: its source is
		store  = 17 // the address's four words into scratch memory
	)
	prog := []bpf.Instruction{
		/* 0 */ bpf.LoadAbsolute{Off: 12, Size: 2}, // EtherType
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0x86dd, SkipTrue: drop - 2},
		/* 2 */ bpf.LoadAbsolute{Off: 14 + 6, Size: 1}, // next header
		/* 3 */ bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: protocolICMPv6, SkipTrue: drop - 4},
		/* 4 */ bpf.LoadAbsolute{Off: offEthSource, Size: 4},
		/* 5 */ bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: ownHigh, SkipTrue: 2},
		/* 6 */ bpf.LoadAbsolute{Off: offEthSource + 4, Size: 2},
		/* 7 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: ownLow, SkipTrue: drop - 8},
		/* 8 */ bpf.LoadAbsolute{Off: offICMPType, Size: 1},
		/* 9 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: typeNeighborAdvertisement, SkipTrue: target - 10},
		/* 10 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: typeNeighborSolicitation, SkipTrue: source - 11},
		/* 11 */ bpf.Jump{Skip: drop - 12},
		/* 12 */ bpf.RetConstant{Val: 0},
		/* 13 */ bpf.LoadConstant{Dst: bpf.RegX, Val: offNDTarget},
		/* 14 */ bpf.Jump{Skip: store - 15},
		/* 15 */ bpf.LoadConstant{Dst: bpf.RegX, Val: offIPv6Src},
		/* 16 */ bpf.Jump{Skip: store - 17},
	}
	if len(own) != 6 {
		prog[5] = bpf.Jump{Skip: 8 - 6} // no MAC of our own to compare
	}
	for w := range 4 {
		prog = append(prog, bpf.LoadIndirect{Off: uint32(4 * w), Size: 4}, bpf.StoreScratch{Src: bpf.RegA, N: w})
	}
	for _, v := range vips {
		a := v.As16()
		for w := range 4 {
			left := 3 - w // comparisons after this one
			prog = append(prog,
				bpf.LoadScratch{Dst: bpf.RegA, N: w},
				bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: binary.BigEndian.Uint32(a[4*w:]), SkipTrue: uint8(2*left + 1)})
		}
		prog = append(prog, bpf.RetConstant{Val: readBuffer})
	}
	return append(prog, bpf.RetConstant{Val: 0})
}
