package main

import "runtime"

// The daemon serves no heap profile, so the runtime need not sample its
// allocations for one. Sampling at the default rate (one allocation every
// 512 KiB) records a bucket for each new call stack it samples and touches
// a page of its hash table for each: start-up allocates some 45 MB with
// 255 groups, and a node kept about 0.45 MiB more private memory at rest
// for buckets nothing reads (2 KiB a group). Set as early as the program
// can: the packages' own initialisation has run, start-up has not.
// `go test -memprofile` still profiles: the test binary sets the rate
// after this.
func init() { runtime.MemProfileRate = 0 }
