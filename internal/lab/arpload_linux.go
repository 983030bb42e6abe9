package lab

import (
	"context"
	"time"
)

// ARPLoadStats is what an ARP load sent.
type ARPLoadStats struct {
	Sent, Errors int
	Took         time.Duration
}

// ARPLoad broadcasts unrelated ARP requests (unrelatedARP) from the
// stranger at rate frames a second until ctx ends, paced to the wall clock
// in millisecond batches. It needs Options.Stranger.
func (l *Lab) ARPLoad(ctx context.Context, rate int) (ARPLoadStats, error) {
	var st ARPLoadStats
	s, err := l.strangerSender()
	if err != nil {
		return st, err
	}
	defer s.close()
	// Prepared once: the load must cost the lab little, not the daemons.
	frames := make([][]byte, 254)
	for i := range frames {
		sender, target := unrelatedARP(i)
		frames[i] = ARPRequest(l.StrangerMAC(), sender, target)
	}
	start := time.Now()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		due := int(time.Since(start).Seconds() * float64(rate))
		for ; st.Sent < due; st.Sent++ {
			if err := s.send(frames[st.Sent%len(frames)]); err != nil {
				st.Errors++ // ENOBUFS under load: counted, not fatal
			}
		}
		select {
		case <-ctx.Done():
			st.Took = time.Since(start)
			return st, nil
		case <-t.C:
		}
	}
}
