#!/usr/bin/python3
"""craft.py writes the crafted golden VRRPv3 adverts in this directory.

Neither peer installed here (keepalived 2.2.7, FRR 8.4.4) can send the RFC 9568
IPv4 checksum, which leaves out the pseudo-header, so these adverts are made
with scapy, a codec independent of vipd's: scapy's VRRPv3 layer fills in the
RFC 5798 checksum (pseudo-header included), and the RFC 9568 form is the
RFC 1071 checksum of the VRRP packet alone (scapy.utils.checksum).

Usage: ./craft.py [OUTDIR]   (needs python3-scapy; default OUTDIR: this directory)
"""
import os
import sys

from scapy.layers.inet import IP
from scapy.layers.vrrp import VRRPv3
from scapy.utils import checksum
from scapy.compat import raw
import scapy

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
SRC = "198.51.100.11"


def craft(name, form, prio, adv_cs, addrs, dst="224.0.0.18", comment=""):
    pkt = IP(src=SRC, dst=dst, ttl=255, tos=0xC0) / VRRPv3(vrid=51, priority=prio, adv=adv_cs, addrlist=addrs)
    vrrp = bytearray(raw(IP(raw(pkt))[VRRPv3]))  # re-parsed: scapy's checksum filled in
    if form == "rfc9568":
        vrrp[6:8] = b"\0\0"
        c = checksum(bytes(vrrp))
        vrrp[6:8] = c.to_bytes(2, "big")
        how = "RFC 1071 checksum of the VRRP packet alone, WITHOUT the IPv4 pseudo-header (RFC 9568)"
    else:
        how = "scapy's VRRPv3 checksum, over the IPv4 pseudo-header and the VRRP packet (RFC 5798)"
    with open(os.path.join(OUT, name), "w") as f:
        f.write(f"# source: crafted with scapy {scapy.__version__} by craft.py (no installed peer sends RFC 9568 checksums)\n")
        f.write(f"# advert: VRID 51, priority {prio}, Max Adver Int {adv_cs} cs, addresses {' '.join(addrs)}{comment}\n")
        f.write(f"# checksum 0x{vrrp[6]:02x}{vrrp[7]:02x}: {how}\n")
        f.write(f"src {SRC}\ndst {dst}\nttl 255\ntos 0xc0\nchecksum {form}\npayload {vrrp.hex()}\n")
    print(f"craft.py: wrote {name} (payload {vrrp.hex()})", file=sys.stderr)


ONE = ["198.51.100.10"]
TWO = ["198.51.100.10", "198.51.100.20"]
craft("crafted-v3-rfc9568-vrid51-prio100.txt", "rfc9568", 100, 100, ONE)
craft("crafted-v3-rfc5798-vrid51-prio100.txt", "rfc5798", 100, 100, ONE,
      comment="; the RFC 5798 twin of crafted-v3-rfc9568-vrid51-prio100.txt")
craft("crafted-v3-rfc9568-vrid51-prio0-2vips.txt", "rfc9568", 0, 100, TWO)
craft("crafted-v3-rfc9568-vrid51-prio200-2vips-int10cs-unicast.txt", "rfc9568", 200, 10, TWO, dst="198.51.100.12",
      comment="; unicast to 198.51.100.12")
craft("crafted-v3-rfc5798-vrid51-prio200-2vips-int10cs-unicast.txt", "rfc5798", 200, 10, TWO, dst="198.51.100.12",
      comment="; unicast to 198.51.100.12; the RFC 5798 twin of the rfc9568 file")
