package transport

import (
	"encoding/binary"
	"net/netip"
	"time"

	"golang.org/x/net/bpf"
)

// A QuietPattern is an advert a Backup need not read when it comes: the
// same bytes from the same Master as the last one, whose only effect is to
// push the Master_Down_Timer back. The kernel queues such adverts on a
// second socket, with their arrival times, and the Backup reads them when
// it must decide (its timer fires, anything else happens); every other
// advert wakes it at once.
type QuietPattern struct {
	Src     netip.Addr // IPv4
	Payload []byte     // the VRRP packet, byte for byte
}

// A Quieter is a Conn that can set adverts aside (the IPv4 Conn).
type Quieter interface {
	// SetQuiet replaces the patterns with the first n of patterns, as many
	// as the kernel takes: adverts matching one go to the quiet queue, all
	// others to ReadFrom and Receive as before. While it changes, an
	// advert may be in both, never in neither; an error changes nothing.
	SetQuiet(patterns []QuietPattern) (n int, err error)
	// ReadQuiet hands each advert waiting in the quiet queue to fn, with
	// the time it arrived, and returns when the queue is empty. It never
	// waits.
	ReadQuiet(fn func(payload []byte, info PacketInfo, at time.Time)) error
}

// MaxQuietPayload bounds a pattern's advert (an advert with up to 12 IPv4
// addresses, or VRRPv2 with authentication and 10); longer ones are
// always read at once.
const MaxQuietPayload = 56

// Offsets in the IPv4 datagram a raw socket's filter sees.
const (
	offIPVersionIHL = 0
	offIPTotalLen   = 2
	offIPTTL        = 8
	offIPSrc        = 12
	ipv4PlainHeader = 0x45 // version 4, a 20-byte header: no options
	headerLen       = 20
	keepDatagram    = 0xffff
	bpfMaxInsns     = 4096
)

// quietMatch appends the checks that p matches: a plain IPv4 header with
// TTL 255 from p.Src, of p's length, carrying p.Payload word by word. Each
// failed check jumps to the instruction after the block (the next
// pattern's), which then runs onMatch.
func quietMatch(prog []bpf.Instruction, p QuietPattern, onMatch bpf.Instruction) []bpf.Instruction {
	type check struct {
		load bpf.Instruction
		val  uint32
	}
	checks := []check{
		{bpf.LoadAbsolute{Off: offIPVersionIHL, Size: 1}, ipv4PlainHeader},
		{bpf.LoadAbsolute{Off: offIPTTL, Size: 1}, 255},
		{bpf.LoadAbsolute{Off: offIPSrc, Size: 4}, binary.BigEndian.Uint32(p.Src.AsSlice())},
		{bpf.LoadAbsolute{Off: offIPTotalLen, Size: 2}, uint32(headerLen + len(p.Payload))},
	}
	for off := 0; off+4 <= len(p.Payload); off += 4 {
		checks = append(checks, check{bpf.LoadAbsolute{Off: uint32(headerLen + off), Size: 4}, binary.BigEndian.Uint32(p.Payload[off:])})
	}
	for i, c := range checks {
		left := len(checks) - i - 1 // checks after this one
		prog = append(prog, c.load, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: c.val, SkipTrue: uint8(2*left + 1)})
	}
	return append(prog, onMatch)
}

func (p QuietPattern) equal(q QuietPattern) bool {
	return p.Src == q.Src && string(p.Payload) == string(q.Payload)
}

// quietable says whether p can be a pattern.
func quietable(p QuietPattern) bool {
	return p.Src.Is4() && len(p.Payload) >= 8 && len(p.Payload) <= MaxQuietPayload && len(p.Payload)%4 == 0
}

// quietPrograms returns the two filters for patterns: main keeps what
// matches none, quiet keeps what matches one. Patterns that would not fit
// the kernel's limit are left out (their adverts are read at once), and
// so are patterns that cannot be one.
func quietPrograms(patterns []QuietPattern) (main, quiet []bpf.Instruction, used int) {
	for _, p := range patterns {
		if !quietable(p) {
			continue
		}
		block := quietMatch(nil, p, bpf.RetConstant{})
		if len(main)+len(block)+1 > bpfMaxInsns {
			break
		}
		main = quietMatch(main, p, bpf.RetConstant{Val: 0})
		quiet = quietMatch(quiet, p, bpf.RetConstant{Val: keepDatagram})
		used++
	}
	main = append(main, bpf.RetConstant{Val: keepDatagram})
	quiet = append(quiet, bpf.RetConstant{Val: 0})
	return main, quiet, used
}

// arrivalAge is how long ago a datagram arrived, from its kernel time stamp
// (the wall clock): age by the wall clock, span and wallSpan the time since
// the quiet queue was last emptied by the monotonic and the wall clock
// (zero: never). It is never negative and never more than span: a wall
// clock stepped meanwhile must not age an advert into a takeover; if it
// stepped (the two spans differ), every advert counts as just arrived,
// which at worst delays noticing a dead Master once.
func arrivalAge(age, span, wallSpan time.Duration) time.Duration {
	if d := wallSpan - span; d > time.Millisecond || d < -time.Millisecond {
		return 0
	}
	if span > 0 && age > span {
		return span
	}
	return max(age, 0)
}
