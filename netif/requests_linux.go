package netif

// The netlink library reads every answer into a 64 KiB array on the
// stack of the goroutine that asked, which then holds a 128 KiB stack
// until the collector has halved it five times. The daemon asks from each
// election's goroutine (a takeover of 255 groups grew 32 MB of stacks), so
// a Manager asks from a goroutine of its own: one large stack for the
// process, and the callers' stay as small as their own work.

// requests runs netlink requests, one at a time, on the Manager's
// goroutine.
type requests struct {
	queue chan func()
	stop  chan struct{} // closed by Close: no request runs after it
	done  chan struct{} // closed when the goroutine has returned
}

func newRequests() *requests {
	r := &requests{queue: make(chan func()), stop: make(chan struct{}), done: make(chan struct{})}
	go r.serve()
	return r
}

func (r *requests) serve() {
	defer close(r.done)
	for {
		select {
		case f := <-r.queue:
			f()
		case <-r.stop:
			return
		}
	}
}

// close stops the goroutine; a request in progress finishes first.
func (r *requests) close() {
	close(r.stop)
	<-r.done
}

// ask runs f on the requests' goroutine and returns its result, or
// errClosed once the Manager is closed.
func ask[T any](m *Manager, f func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	finished := make(chan struct{})
	select {
	case m.reqs.queue <- func() { v, err = f(); close(finished) }:
	case <-m.reqs.stop:
		return v, errClosed
	}
	<-finished
	return v, err
}

// askErr is ask for a request that returns only an error.
func askErr(m *Manager, f func() error) error {
	_, err := ask(m, func() (struct{}, error) { return struct{}{}, f() })
	return err
}
