package vrrp

import (
	"fmt"
	"time"
)

// validateVersion checks what VRRPv2 restricts: IPv4, whole seconds, and an
// authentication only it carries.
func (c *Config) validateVersion() error {
	switch c.Version {
	case 0, Version:
		// A VRRPv3 router that still accepts VRRPv2 adverts checks their
		// password; its own adverts carry none.
		if c.Auth != (Auth{}) && !c.AcceptOtherVersion {
			return fmt.Errorf("vrrp: VRRPv3 adverts carry no authentication (RFC 5798 section 9); it is VRRPv2's")
		}
		return nil
	case Version2:
	default:
		return fmt.Errorf("vrrp: version %d: only 2 and 3 are spoken", c.Version)
	}
	switch {
	case c.Primary.IsValid() && !c.Primary.Is4():
		return fmt.Errorf("vrrp: VRRPv2 is IPv4 only (RFC 3768), not %v", c.Primary)
	case c.AdvertInterval < MinAdvertIntervalV2 || c.AdvertInterval > MaxAdvertIntervalV2 || c.AdvertInterval%time.Second != 0:
		return fmt.Errorf("vrrp: VRRPv2 advert interval %v is not whole seconds between %v and %v", c.AdvertInterval, MinAdvertIntervalV2, MaxAdvertIntervalV2)
	case c.Auth.Type != AuthNone && c.Auth.Type != AuthPass:
		return fmt.Errorf("vrrp: VRRPv2 authentication type %d: only none and simple text are spoken", c.Auth.Type)
	case c.Auth.Type == AuthNone && c.Auth.Data != [authDataLen]byte{}:
		return fmt.Errorf("vrrp: authentication data without a type")
	}
	return nil
}

// checkVersion drops an advert of a version the router does not speak.
func (m *Machine) checkVersion(adv *Advertisement) error {
	v := adv.Version
	if v == 0 {
		v = Version
	}
	if v != m.cfg.Version && !m.cfg.AcceptOtherVersion {
		return DropVersion
	}
	return nil
}

// checkAuth applies RFC 3768 section 7.1 to a VRRPv2 advert: its Auth Type,
// and with a password its data, must be ours. A VRRPv3 advert accepted
// during a move between versions has no authentication to check.
func (m *Machine) checkAuth(adv *Advertisement) error {
	switch {
	case adv.Version != Version2:
		return nil
	case adv.Auth.Type != m.cfg.Auth.Type:
		return DropAuth
	case adv.Auth.Type == AuthNone:
		// The data of no authentication is to be ignored on receipt
		// (RFC 3768 section 5.3.10), whatever a peer put there.
		return nil
	case adv.Auth.Data != m.cfg.Auth.Data:
		return DropAuth
	}
	return nil
}
