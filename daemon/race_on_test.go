//go:build race

package daemon

// raceDetector: the race detector's instrumentation makes frames larger.
const raceDetector = true
