package vrrp

// A DropReason says why a received advertisement was discarded. It is an
// error so that Decode and ReceiveAdvert can return it without allocating,
// and its String is stable: it labels the drop counters operators alert on.
type DropReason uint8

// Reasons for discarding an advertisement (RFC 5798 section 7.1 and the
// receiver's own checks).
const (
	dropInvalid            DropReason = iota
	DropTooShort                      // shorter than the fixed header
	DropVersion                       // a VRRP version the virtual router does not accept
	DropType                          // not an advertisement
	DropFamily                        // source and destination of different families
	DropLength                        // length does not match the address count
	DropChecksum                      // checksum does not verify
	DropInterval                      // Max Advertise Interval of zero
	DropTTL                           // TTL or hop limit not 255: not from this link
	DropVRID                          // a VRID that is not ours
	DropAddressList                   // our VRID with other addresses: a VRID collision
	DropOwnAdvert                     // our own advert looped back
	DropNotPeer                       // unicast mode: the source is not a configured peer
	DropZeroNotMaster                 // priority 0 from a router that is not our Master
	DropUnknownOwner                  // priority 255 from a host neither a peer nor our Master
	DropSourceNotLinkLocal            // IPv6 multicast: the source is not a link-local address
	DropAuth                          // VRRPv2: authentication type or password not ours
	DropIntervalMismatch              // VRRPv2: an advert interval other than ours
	numDropReasons
)

// NumDropReasons bounds the reasons: counters by reason are arrays of this
// length, indexed by DropReason.Index.
const NumDropReasons = int(numDropReasons)

// Index is the reason's place in an array of NumDropReasons; a value no
// reason has counts as invalid.
func (r DropReason) Index() int {
	if r >= numDropReasons {
		return int(dropInvalid)
	}
	return int(r)
}

var dropNames = [numDropReasons]string{
	dropInvalid:       "invalid",
	DropTooShort:      "too_short",
	DropVersion:       "version",
	DropType:          "type",
	DropFamily:        "family",
	DropLength:        "length",
	DropChecksum:      "checksum",
	DropInterval:      "interval",
	DropTTL:           "ttl",
	DropVRID:          "vrid",
	DropAddressList:   "address_list",
	DropOwnAdvert:     "own_advert",
	DropNotPeer:       "not_peer",
	DropZeroNotMaster: "priority_zero_not_master",
	DropUnknownOwner:  "unknown_owner",

	DropSourceNotLinkLocal: "source_not_link_local",
	DropAuth:               "auth",
	DropIntervalMismatch:   "interval_mismatch",
}

var dropTexts = [numDropReasons]string{
	dropInvalid:       "invalid drop reason",
	DropTooShort:      "packet shorter than a VRRP header",
	DropVersion:       "a VRRP version this virtual router does not speak (see version and accept_versions)",
	DropType:          "not a VRRP advertisement",
	DropFamily:        "source and destination of different address families",
	DropLength:        "length does not match the address count",
	DropChecksum:      "bad checksum",
	DropInterval:      "advert interval of zero",
	DropTTL:           "TTL is not 255: sent from off the link",
	DropVRID:          "VRID is not ours",
	DropAddressList:   "address list differs from ours (VRID collision?)",
	DropOwnAdvert:     "our own advert",
	DropNotPeer:       "source is not a configured unicast peer",
	DropZeroNotMaster: "priority 0 (release) from a router that is not the Master we follow",
	DropUnknownOwner:  "priority 255 (address owner) from a host that is neither a configured peer nor the current Master",

	DropSourceNotLinkLocal: "IPv6 advert from a source that is not link-local (RFC 5798 section 5.1.2.1)",
	DropAuth:               "VRRPv2 authentication type or password differs from ours (auth_pass)",
	DropIntervalMismatch:   "VRRPv2 advert interval differs from ours: RFC 3768 routers of a group must agree on it",
}

// DropReasons lists every reason, for callers that pre-create counters.
func DropReasons() []DropReason {
	rs := make([]DropReason, 0, numDropReasons-1)
	for r := DropTooShort; r < numDropReasons; r++ {
		rs = append(rs, r)
	}
	return rs
}

// String returns the reason's stable, metric-friendly name.
func (r DropReason) String() string {
	if r >= numDropReasons {
		return dropNames[dropInvalid]
	}
	return dropNames[r]
}

// Error describes the reason in words.
func (r DropReason) Error() string {
	if r >= numDropReasons {
		return "vrrp: " + dropTexts[dropInvalid]
	}
	return "vrrp: " + dropTexts[r]
}
