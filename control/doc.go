// Package control is vipd's control socket: the unix socket through which
// the vipd command asks the running daemon for its status and history,
// drains and undrains instances, and reloads the configuration.
//
// The protocol is one request per connection: the client writes a single
// line of JSON, {"command":"drain","args":{"instance":"k8s-api"}}, and
// reads a single JSON response, {"ok":true,"result":...} or
// {"ok":false,"error":"...","problems":["FILE:LINE: msg"]}. The result
// types in this package (InstanceStatus, Transition, DrainResult,
// ReloadResult) are the stable interface for scripts, the same one that
// `vipd status --json` prints: fields are only ever added.
//
// Access is controlled by the socket file's mode (0660) and group; the
// server also logs who asked for each change, so "why did the address
// move?" has an answer that names a person.
package control
