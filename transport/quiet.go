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
	Src     netip.Addr // of the Conn's family
	Payload []byte     // the VRRP packet, byte for byte
}

// A Quieter is a Conn that can set adverts aside (both real Conns).
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

// MaxQuietPayload bounds a pattern's advert over IPv4 (an advert with up
// to 12 IPv4 addresses, or VRRPv2 with authentication and 10), and
// maxQuietPayload6 over IPv6 (two IPv6 addresses): the filter keeps the
// source and the advert in the 16 words of scratch memory classic BPF has.
// Longer adverts are always read at once.
const (
	MaxQuietPayload  = 56
	maxQuietPayload6 = 48
)

// MaxQuietPayloadFrom is the longest advert from src a pattern can hold:
// MaxQuietPayload over IPv4, less over IPv6, whose source takes four words
// of the filter's scratch memory instead of one.
func MaxQuietPayloadFrom(src netip.Addr) int {
	if src.Is6() && !src.Is4In6() {
		return quiet6.maxPayload()
	}
	return quiet4.maxPayload()
}

// protoVRRP is VRRP's IP protocol number.
const protoVRRP = 112

// minQuietPayload is a VRRP header's length.
const minQuietPayload = 8

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

// A raw IPv6 socket's filter sees the VRRP packet alone; the IPv6 header
// is read at these offsets from the network header (SKF_NET_OFF).
const (
	skfNetOff        = 0xfff00000 // SKF_NET_OFF, -0x100000 as the kernel's uint32
	offIPv6NextHdr   = skfNetOff + 6
	offIPv6HopLimit  = skfNetOff + 7
	offIPv6Src       = skfNetOff + 8
	ipv6AddressWords = 4
)

// quietFamily is the address family a quiet program filters, which says
// what the filter sees and where it keeps what it compares.
type quietFamily bool

const (
	quiet4 quietFamily = false
	quiet6 quietFamily = true
)

// srcWords: scratch words of the source. Scratch memory holds the source,
// then the datagram's length, then words 1 and on of the VRRP packet (word
// 0 is the dispatch's, in A).
func (f quietFamily) srcWords() int {
	if f == quiet6 {
		return ipv6AddressWords
	}
	return 1
}

func (f quietFamily) scratchLen() int       { return f.srcWords() }
func (f quietFamily) scratchWord(w int) int { return f.srcWords() + w }

// vrrpOffset is where the VRRP packet starts in what the filter sees, and
// so what the datagram's length adds to the packet's.
func (f quietFamily) vrrpOffset() uint32 {
	if f == quiet6 {
		return 0
	}
	return headerLen
}

func (f quietFamily) maxPayload() int {
	if f == quiet6 {
		return maxQuietPayload6
	}
	return MaxQuietPayload
}

// srcValues is p's source as the scratch words hold it.
func (f quietFamily) srcValues(src netip.Addr) []uint32 {
	b := src.AsSlice()
	v := make([]uint32, len(b)/4)
	for i := range v {
		v[i] = binary.BigEndian.Uint32(b[4*i:])
	}
	return v
}

// quietBlock appends the checks that p matches, once the program's head
// has checked the datagram (a plain header, hop limit or TTL 255) and word
// 0 of the VRRP packet and put the source, the length and the VRRP
// packet's other words in scratch memory: the source, the length, then the
// rest of p.Payload word by word, none of it read from the packet again. A
// failed check jumps past the block (the next pattern's, or the "no match"
// after the last); a match returns onMatch.
func (f quietFamily) quietBlock(prog []bpf.Instruction, p QuietPattern, onMatch bpf.Instruction) []bpf.Instruction {
	type check struct {
		slot int
		val  uint32
	}
	var checks []check
	for i, v := range f.srcValues(p.Src) {
		checks = append(checks, check{i, v})
	}
	checks = append(checks, check{f.scratchLen(), f.vrrpOffset() + uint32(len(p.Payload))})
	for w := 1; 4*w+4 <= len(p.Payload); w++ {
		checks = append(checks, check{f.scratchWord(w), binary.BigEndian.Uint32(p.Payload[4*w:])})
	}
	for i, c := range checks {
		left := len(checks) - i - 1 // checks after this one
		prog = append(prog, bpf.LoadScratch{Dst: bpf.RegA, N: c.slot}, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: c.val, SkipTrue: uint8(2*left + 1)})
	}
	return append(prog, onMatch)
}

// quietHead checks what all patterns share (a plain header, TTL or hop
// limit 255, room for a VRRP header), keeps the source, the length and as
// many of the VRRP packet's words as it has, up to words, in scratch
// memory, and leaves word 0 (version, type, VRID, priority, count) in A for
// the dispatch: every byte is loaded from the packet once per datagram, not
// once per pattern, which keeps the program small in the kernel (a packet
// load is a dozen instructions there, charged to net.core.optmem_max) and
// cheap to run.
func (f quietFamily) quietHead(noMatch bpf.Instruction, words int) []bpf.Instruction {
	// The kernel refuses a program that may read scratch memory it did not
	// write: the words a short datagram lacks read as 0 (its length
	// check fails first).
	prog := []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegA, Val: 0}}
	for w := 1; w < words; w++ {
		prog = append(prog, bpf.StoreScratch{Src: bpf.RegA, N: f.scratchWord(w)})
	}
	if f == quiet6 {
		// No extension header (the next header is VRRP), hop limit 255,
		// and the length of the VRRP packet the socket sees.
		prog = append(prog,
			bpf.LoadAbsolute{Off: offIPv6NextHdr, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: protoVRRP, SkipTrue: 1},
			noMatch,
			bpf.LoadAbsolute{Off: offIPv6HopLimit, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 255, SkipTrue: 1},
			noMatch,
			bpf.LoadExtension{Num: bpf.ExtLen},
		)
	} else {
		prog = append(prog,
			bpf.LoadAbsolute{Off: offIPVersionIHL, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: ipv4PlainHeader, SkipTrue: 1},
			noMatch,
			bpf.LoadAbsolute{Off: offIPTTL, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 255, SkipTrue: 1},
			noMatch,
			bpf.LoadAbsolute{Off: offIPTotalLen, Size: 2},
		)
	}
	prog = append(prog,
		bpf.StoreScratch{Src: bpf.RegA, N: f.scratchLen()},
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: f.vrrpOffset() + minQuietPayload, SkipTrue: 1},
		noMatch,
	)
	if f == quiet6 {
		for i := range ipv6AddressWords {
			prog = append(prog, bpf.LoadAbsolute{Off: offIPv6Src + uint32(4*i), Size: 4}, bpf.StoreScratch{Src: bpf.RegA, N: i})
		}
	} else {
		prog = append(prog, bpf.LoadAbsolute{Off: offIPSrc, Size: 4}, bpf.StoreScratch{Src: bpf.RegA, N: 0})
	}
	// Words 1.. as far as the datagram's length says (the kernel has
	// checked it against what arrived) and the longest pattern goes: each
	// step is four instructions, and a datagram that ends skips the rest.
	for w := 1; w < words; w++ {
		left := words - w - 1 // steps after this one
		prog = append(prog,
			bpf.LoadScratch{Dst: bpf.RegA, N: f.scratchLen()},
			bpf.JumpIf{Cond: bpf.JumpLessThan, Val: f.vrrpOffset() + uint32(4*w+4), SkipTrue: uint8(4*left + 2)},
			bpf.LoadAbsolute{Off: f.vrrpOffset() + uint32(4*w), Size: 4},
			bpf.StoreScratch{Src: bpf.RegA, N: f.scratchWord(w)})
	}
	return append(prog, bpf.LoadAbsolute{Off: f.vrrpOffset(), Size: 4})
}

// quietProgram is one filter for patterns: the head, a dispatch on word 0
// (one comparison per distinct word 0, which a VRID and priority make
// unique but for a pattern replaced by one of the same priority), then per
// word 0 the blocks of its patterns. An advert of no pattern costs the
// head's loads and the dispatch's comparisons, not a load per pattern.
func (f quietFamily) quietProgram(patterns []QuietPattern, onMatch, noMatch bpf.Instruction) []bpf.Instruction {
	if len(patterns) == 0 {
		return []bpf.Instruction{noMatch}
	}
	var word0s []uint32
	byWord0 := map[uint32][]QuietPattern{}
	for _, p := range patterns {
		w := binary.BigEndian.Uint32(p.Payload)
		if _, ok := byWord0[w]; !ok {
			word0s = append(word0s, w)
		}
		byWord0[w] = append(byWord0[w], p)
	}
	blocks := make([][]bpf.Instruction, len(word0s))
	for i, w := range word0s {
		for _, p := range byWord0[w] {
			blocks[i] = f.quietBlock(blocks[i], p, onMatch)
		}
		blocks[i] = append(blocks[i], noMatch)
	}
	prog := f.quietHead(noMatch, longestWords(patterns))
	// Entry i jumps over the entries after it, the "no match" after them
	// and the blocks before its own.
	before := 0
	for i, w := range word0s {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: w, SkipTrue: 1},
			bpf.Jump{Skip: uint32(2*(len(word0s)-i-1) + 1 + before)})
		before += len(blocks[i])
	}
	prog = append(prog, noMatch)
	for _, b := range blocks {
		prog = append(prog, b...)
	}
	return prog
}

func (p QuietPattern) equal(q QuietPattern) bool {
	return p.Src == q.Src && string(p.Payload) == string(q.Payload)
}

// quietable says whether p can be a pattern of the family.
func (f quietFamily) quietable(p QuietPattern) bool {
	family := p.Src.Is4()
	if f == quiet6 {
		family = p.Src.Is6() && !p.Src.Is4In6() && p.Src.Zone() == ""
	}
	return family && len(p.Payload) >= minQuietPayload && len(p.Payload) <= f.maxPayload() && len(p.Payload)%4 == 0
}

// longestWords is how many words the longest of ps has.
func longestWords(ps []QuietPattern) int {
	n := 0
	for _, p := range ps {
		n = max(n, len(p.Payload)/4)
	}
	return n
}

// mainProgram is the main socket's filter for ps, which fit (quietFit):
// it keeps what matches none of them.
func (f quietFamily) mainProgram(ps []QuietPattern) []bpf.Instruction {
	return f.quietProgram(ps, bpf.RetConstant{Val: 0}, bpf.RetConstant{Val: keepDatagram})
}

// quietOnly is the quiet socket's filter for ps, which fit (quietFit): it
// keeps what matches one of them.
func (f quietFamily) quietOnly(ps []QuietPattern) []bpf.Instruction {
	return f.quietProgram(ps, bpf.RetConstant{Val: keepDatagram}, bpf.RetConstant{Val: 0})
}

// quietFit returns the patterns of patterns that go into one program, in
// order: those that can be a pattern, up to the kernel's limit. It counts
// the instructions quietProgram would write without writing them: a burst
// of changes (255 groups taking over at a cut) sizes a program for each.
func (f quietFamily) quietFit(patterns []QuietPattern) []QuietPattern {
	ps := make([]QuietPattern, 0, len(patterns))
	// The head as long as it can be, and the dispatch's "no match".
	size := len(f.quietHead(bpf.RetConstant{}, f.maxPayload()/4)) + 1
	word0s := map[uint32]bool{}
	for _, p := range patterns {
		if !f.quietable(p) {
			continue
		}
		n := f.blockLen(p)
		w := binary.BigEndian.Uint32(p.Payload)
		if !word0s[w] {
			n += 3 // its dispatch entry and its block's "no match"
		}
		if size+n > bpfMaxInsns {
			break
		}
		size += n
		word0s[w] = true
		ps = append(ps, p)
	}
	return ps
}

// blockLen is the length of p's block (quietBlock): a load and a jump per
// check (each word of the source, the length, each word of the payload
// after the first), then the match.
func (f quietFamily) blockLen(p QuietPattern) int {
	return 2*(f.srcWords()+1+len(p.Payload)/4-1) + 1
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
