package lab

import (
	"sort"
	"time"
)

// Answer is one answered probe: when it was sent and when its answer came.
type Answer struct {
	Seq  uint64
	Sent time.Time
	Recv time.Time
}

// Gap is the longest silence between two consecutive answers.
type Gap struct {
	Len time.Duration
	// After is the last answer before the gap, Before the first after it.
	After, Before Answer
}

// longestGap finds the longest gap between consecutive answer receive times
// within [from, to]. Answers must be in receive order.
func longestGap(answers []Answer, from, to time.Time) Gap {
	i := sort.Search(len(answers), func(k int) bool { return !answers[k].Recv.Before(from) })
	var g Gap
	for k := i + 1; k < len(answers) && !answers[k].Recv.After(to); k++ {
		if d := answers[k].Recv.Sub(answers[k-1].Recv); d > g.Len {
			g = Gap{Len: d, After: answers[k-1], Before: answers[k]}
		}
	}
	return g
}
