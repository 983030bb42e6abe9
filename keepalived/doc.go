// Package keepalived reads keepalived.conf and converts it to vipd's
// config.
//
// Its one job is migration: [ParseFile] reads a keepalived.conf with its
// include files into a tree of statements, each with its file and line, and
// [Convert] turns the VRRP part of that tree into a vipd.toml that passes
// config.Parse, listing everything it could not convert, and why, as
// FILE:LINE items. The parser is in parse.go; the conversion is split by
// keepalived block: global_defs, vrrp_instance (with its addresses), the
// trackers and notify scripts, and vrrp_sync_group, then written as
// commented TOML.
package keepalived
