// Package hoststat reads how starved the host is, so that a transition can
// be recorded with the answer to "was the machine starved when the address
// moved?": the kernel's pressure stall information (/proc/pressure/cpu, io
// and memory: the share of the last 10 s in which some, or all, runnable
// tasks waited for the resource) and the CPU time stolen by the hypervisor
// and spent waiting for IO since the previous sample (/proc/stat, as vmstat's
// st and wa columns).
//
// The parse functions are pure and work on any OS; a Sampler reads /proc on
// Linux and reports errors.ErrUnsupported elsewhere. A kernel without PSI
// (CONFIG_PSI off, or psi=0 on its command line) is not an error: the
// sample says the pressure is not available.
package hoststat
