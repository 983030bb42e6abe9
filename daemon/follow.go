package daemon

import "github.com/vipd/vipd/vrrp"

// leaderState is what a follower needs of its leader.
type leaderState struct {
	master bool
	prio   uint8
	cause  string
}

// leaderChanged hands a follower its leader's latest state without
// blocking the leader: a state not yet read is replaced.
func (in *instance) leaderChanged(ls leaderState) { in.mb.postLeader(ls) }

// followLeader makes a follower's election follow its leader: Master while
// the leader is, advertising the leader's priority.
func (in *instance) followLeader(ls leaderState, out []vrrp.Action) []vrrp.Action {
	if ls.prio != 0 && ls.prio != 255 {
		in.leaderPrio = ls.prio
		out = in.m.SetPriority(ls.prio, out)
		in.pubMu.Lock()
		in.pub.priority = ls.prio
		in.pubMu.Unlock()
	}
	return in.m.SetLeader(ls.master, ls.cause, out)
}
