package arp

import (
	"encoding/binary"
	"net"
	"net/netip"

	"golang.org/x/net/bpf"
)

// Offsets in an Ethernet frame carrying ARP for Ethernet and IPv4 (RFC 826).
// A packet socket sees the frame without VLAN tags: the kernel moves them
// into the packet's metadata before any tap sees it.
const (
	offEtherType = 12
	offARP       = 14
	offHType     = offARP + 0
	offPType     = offARP + 2 // then the address lengths, one byte each
	offOperation = offARP + 6
	offSenderMAC = offARP + 8
	offSenderIP  = offARP + 14
	offTargetIP  = offARP + 24
	ethHeaderLen = offARP
	arpHeaderLen = 8
	arpIPv4Len   = 28

	etherTypeARP  = 0x0806
	etherTypeIPv4 = 0x0800
	// ipv4OverEthernet is the protocol type and the two address lengths
	// (6-byte MACs, 4-byte IPv4 addresses) read as one 32-bit word.
	ipv4OverEthernet = etherTypeIPv4<<16 | 6<<8 | 4
)

const (
	// bpfMaxInstructions is the kernel's limit on a classic BPF program
	// (BPF_MAXINSNS).
	bpfMaxInstructions = 4096
	// passFrame is what the filter returns for a frame it keeps: the most
	// bytes to queue, as much as Run reads.
	passFrame = readBuffer
	// headerLen is the length of the filter's fixed part (claimHeader).
	headerLen = 15
	// MaxFilterAddresses is the most addresses the kernel filter compares
	// (two instructions each). With more, SetAddresses attaches a filter
	// that passes every other host's Ethernet/IPv4 ARP frame and the
	// Monitor selects the addresses in user space: correct, only dearer.
	MaxFilterAddresses = (bpfMaxInstructions - headerLen - 1) / 2
)

// claimFilter returns a classic BPF program for the monitor's packet
// socket. It passes Ethernet/IPv4 ARP frames whose sender MAC is not own
// and whose sender IP is one of vips; nil vips pass every sender. The
// caller has made vips IPv4, unique and at most MaxFilterAddresses.
//
// Only the sender IP is matched: every claim that matters to a VIP's
// owner names the VIP as its sender (a gratuitous ARP, a second owner's
// answer to our probe or to a client). A frame that only targets a VIP is
// a question (a client resolving it, a host probing for it with sender
// 0.0.0.0); the kernel answers those, the monitor has nothing to do, and
// on a busy LAN they are most of the ARP traffic that names a VIP.
func claimFilter(own net.HardwareAddr, vips []netip.Addr) []bpf.Instruction {
	if vips != nil && len(vips) == 0 {
		return []bpf.Instruction{bpf.RetConstant{Val: 0}}
	}
	prog := make([]bpf.Instruction, 0, headerLen+2*len(vips)+1)
	prog = append(prog, claimHeader(own)...)
	if vips == nil {
		return append(prog, bpf.RetConstant{Val: passFrame})
	}
	// A pair per address keeps every jump short (conditional jumps skip
	// at most 255 instructions) however many addresses there are.
	for _, v := range vips {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: ipv4Word(v), SkipTrue: 1},
			bpf.RetConstant{Val: passFrame},
		)
	}
	return append(prog, bpf.RetConstant{Val: 0})
}

// claimHeader checks that the frame is a whole Ethernet/IPv4 ARP packet
// from another host and leaves the sender IP in register A. It is
// headerLen long. The operation is not checked: other operations are
// rare, and user space skips them.
func claimHeader(own net.HardwareAddr) []bpf.Instruction {
	const (
		drop     = 13 // the shared "ret #0"
		senderIP = 14 // where the last check lands
	)
	var ownHigh, ownLow uint32
	if len(own) == 6 {
		ownHigh, ownLow = binary.BigEndian.Uint32(own[:4]), uint32(binary.BigEndian.Uint16(own[4:]))
	}
	h := []bpf.Instruction{
		/* 0 */ bpf.LoadExtension{Num: bpf.ExtLen},
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpLessThan, Val: offARP + arpIPv4Len, SkipTrue: drop - 2},
		/* 2 */ bpf.LoadAbsolute{Off: offEtherType, Size: 2},
		/* 3 */ bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: etherTypeARP, SkipTrue: drop - 4},
		/* 4 */ bpf.LoadAbsolute{Off: offHType, Size: 2},
		/* 5 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: hardwareEthernet, SkipTrue: 1},
		/* 6 */ bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: hardwareIEEE802, SkipTrue: drop - 7},
		/* 7 */ bpf.LoadAbsolute{Off: offPType, Size: 4},
		/* 8 */ bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: ipv4OverEthernet, SkipTrue: drop - 9},
		/* 9 */ bpf.LoadAbsolute{Off: offSenderMAC, Size: 4},
		/* 10 */ bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: ownHigh, SkipTrue: senderIP - 11},
		/* 11 */ bpf.LoadAbsolute{Off: offSenderMAC + 4, Size: 2},
		/* 12 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: ownLow, SkipTrue: drop - 13, SkipFalse: senderIP - 13},
		/* 13 */ bpf.RetConstant{Val: 0},
		/* 14 */ bpf.LoadAbsolute{Off: offSenderIP, Size: 4},
	}
	if len(own) != 6 {
		// No MAC of our own to compare: go straight to the sender IP.
		h[9] = bpf.Jump{Skip: senderIP - 10}
	}
	return h
}

func ipv4Word(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}
