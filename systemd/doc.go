// Package systemd tells the service manager how vipd is doing, with the
// sd_notify protocol (sd_notify(3)): READY=1 once every instance has
// joined its virtual router, STATUS= with a one-line summary, RELOADING=1
// and STOPPING=1 around reloads and shutdown, and WATCHDOG=1 keep-alives so
// that systemd restarts a daemon whose election loop is stuck.
//
// Outside systemd (no NOTIFY_SOCKET) every call is a harmless no-op, so
// the daemon calls the Notifier unconditionally.
package systemd
