// Package config loads and validates vipd's TOML config file.
//
// Its one job is to turn a file into a [Config] that the daemon can trust,
// or to explain everything that is wrong with it at once, each problem as
// FILE:LINE: message naming the instance and key. Values follow RFC 5798
// (VRRPv3): VRIDs 1..255, priorities 1..254 (255 belongs to an address
// owner, which vipd never is), advertisement intervals in centiseconds.
//
// Decoding has two phases. First the TOML is decoded into raw structs whose
// leaves accept any value, so that a wrong type never stops the decode, and
// unknown keys come from MetaData.Undecoded. Then the raw values are checked
// and converted into the typed config. BurntSushi/toml keeps a single
// position per key name (every [[instance]] would share the last one's), so
// lines come from a small position index of our own, built by scanning the
// source and trusted only when it lists exactly the keys the decoder saw.
package config
