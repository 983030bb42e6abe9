//go:build !linux

package netif

import (
	"context"
	"log/slog"
	"net/netip"
)

// A Manager needs netlink; outside Linux it cannot be created.
type Manager struct{}

// New fails with ErrUnsupported outside Linux.
func New(log *slog.Logger, opts ...Option) (*Manager, error) { return nil, ErrUnsupported }

// Close does nothing outside Linux.
func (m *Manager) Close() error { return nil }

// Link fails with ErrUnsupported outside Linux.
func (m *Manager) Link(name string) (LinkInfo, error) { return LinkInfo{}, ErrUnsupported }

// PrimaryIPv4 fails with ErrUnsupported outside Linux.
func (m *Manager) PrimaryIPv4(ifname string, exclude []netip.Prefix) (netip.Addr, error) {
	return netip.Addr{}, ErrUnsupported
}

// LinkLocal fails with ErrUnsupported outside Linux.
func (m *Manager) LinkLocal(ifname string) (netip.Addr, bool, error) {
	return netip.Addr{}, false, ErrUnsupported
}

// VIPState fails with ErrUnsupported outside Linux.
func (m *Manager) VIPState(ifname string, vip netip.Prefix) (AddrState, error) {
	return 0, ErrUnsupported
}

// AddVIP fails with ErrUnsupported outside Linux.
func (m *Manager) AddVIP(ifname string, vip netip.Prefix, label string) error { return ErrUnsupported }

// RemoveVIP fails with ErrUnsupported outside Linux.
func (m *Manager) RemoveVIP(ifname string, vip netip.Prefix) error { return ErrUnsupported }

// AdoptVIP fails with ErrUnsupported outside Linux.
func (m *Manager) AdoptVIP(ifname string, vip netip.Prefix) (bool, error) {
	return false, ErrUnsupported
}

// HasVIP fails with ErrUnsupported outside Linux.
func (m *Manager) HasVIP(ifname string, vip netip.Prefix) (bool, error) { return false, ErrUnsupported }

// Watch fails with ErrUnsupported outside Linux.
func (m *Manager) Watch(ctx context.Context, events chan<- Event) error { return ErrUnsupported }
