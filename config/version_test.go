package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseVersion2(t *testing.T) {
	cfg := mustParse(t, base+`version = 2
advert_interval = "200s"
accept_versions = [3, 2]
auth_pass = "secret12"
address_owner = "192.0.2.1"
`)
	in := cfg.Instances[0]
	if in.Version != 2 || !in.AcceptOtherVersion || in.AuthPass != "secret12" || in.AddressOwner != netip.MustParseAddr("192.0.2.1") || in.AdvertInterval != 200*time.Second {
		t.Errorf("instance = %+v", in)
	}
	if in := mustParse(t, base).Instances[0]; in.Version != 3 || in.AcceptOtherVersion {
		t.Errorf("default version %d, accepts the other %v; want 3 alone", in.Version, in.AcceptOtherVersion)
	}
	// Moving to VRRPv3: the password still checks the VRRPv2 adverts taken.
	if in := mustParse(t, base+"accept_versions = [2, 3]\nauth_pass = \"secret12\"\n").Instances[0]; in.Version != 3 || in.AuthPass != "secret12" {
		t.Errorf("version 3 accepting 2: version %d, auth_pass %q", in.Version, in.AuthPass)
	}
	if in := mustParse(t, base+"accept_versions = [3]\n").Instances[0]; in.AcceptOtherVersion {
		t.Error("accept_versions = [3] accepts VRRPv2")
	}
}

func TestParseVersionRefusals(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"version 1", base + "version = 1\n", "vipd.toml:6: instance \"k8s-api\": version 1 is not 2"},
		{"version as a string", base + "version = \"2\"\n", "version must be an integer"},
		{"v2 sub-second", base + "version = 2\nadvert_interval = \"100ms\"\n", "vipd.toml:7: instance \"k8s-api\": advert_interval 100ms: VRRPv2 carries whole seconds"},
		{"v2 too slow", base + "version = 2\nadvert_interval = \"256s\"\n", `advert_interval "256s" out of range 10ms..4m15s`},
		{"v3 beyond 40.95s", base + "advert_interval = \"60s\"\n", `advert_interval "60s" out of range 10ms..40.95s`},
		{"v2 ipv6", "[[instance]]\nname = \"a\"\ninterface = \"eth0\"\nvrid = 1\nvips = [\"2001:db8::10\"]\nversion = 2\n", "version 2 is IPv4 only"},
		{"v2 checksum", base + "version = 2\nchecksum = \"rfc9568\"\n", "checksum applies to VRRPv3 only"},
		{"auth_pass with v3", base + "auth_pass = \"x\"\n", "auth_pass applies to VRRPv2 adverts only"},
		{"auth_pass too long", base + "version = 2\nauth_pass = \"123456789\"\n", `keepalived uses the first 8: write "12345678"`},
		{"auth_pass empty", base + "version = 2\nauth_pass = \"\"\n", "auth_pass is empty"},
		{"accept_versions without own", base + "version = 2\naccept_versions = [3]\n", "leaves out version 2"},
		{"accept_versions bad", base + "accept_versions = [3, 4]\n", "accept_versions: 4 is not a VRRP version"},
		{"accept_versions v2 over ipv6", "[[instance]]\nname = \"a\"\ninterface = \"eth0\"\nvrid = 1\nvips = [\"2001:db8::10\"]\naccept_versions = [2, 3]\n", "an IPv6 instance accepts version 3 alone"},
		{"address_owner a VIP", base + "address_owner = \"192.0.2.10\"\n", "address_owner 192.0.2.10 is one of the VIPs"},
		{"address_owner other family", base + "address_owner = \"2001:db8::1\"\n", "address_owner: 2001:db8::1 is IPv6, but the instance's VIPs are IPv4"},
		{"address_owner not an address", base + "address_owner = \"owner\"\n", "address_owner: "},
		{"anycast refuses version", "[[instance]]\nname = \"a\"\nannounce = \"bgp-anycast\"\nvips = [\"192.0.2.30\"]\nversion = 2\n\n[bgp]\nasn = 65001\nrouter_id = \"192.0.2.1\"\n[[bgp.peer]]\naddress = \"192.0.2.254\"\nasn = 65000\n", "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.src)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("problems %q, want one containing %q", got, tt.want)
			}
		})
	}
}
