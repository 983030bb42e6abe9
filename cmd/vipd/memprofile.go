package main

import "runtime"

// noHeapProfile stops the runtime sampling the daemon's allocations for a
// heap profile, which it never serves. Sampling at the default rate (one
// allocation every 512 KiB) records a bucket for each new call stack it
// samples and touches a page of its hash table for each: start-up
// allocates some 45 MB with 255 groups, and a node kept about 0.45 MiB
// more private memory at rest for buckets nothing reads (2 KiB a group).
// Called first thing in main: the packages' own initialisation has run,
// start-up has not; a test binary, which does not run main, profiles as
// usual.
func noHeapProfile() { runtime.MemProfileRate = 0 }
