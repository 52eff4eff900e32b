package planner

import (
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// refused are the writes the server (or the operator's own checks) refused, by the change's
// rendering, with their errors. Event-triggered syncs skip a change planned exactly the same
// again, so that one bad hostname is retried on the interval and never slows the others,
// while a change the user made to it since goes out at once. The rules: a full sync starts the
// list afresh, any sync adds what it had refused; a write refused because it met a newer
// entry than planned from (stale) is no refusal: the next sync plans it again from a read of
// the whole server.
type refused struct {
	byChange map[string]error
}

// skip splits changes into those to send and those refused before, the latter by hostname
// with the error that refused them.
func (r *refused) skip(changes []plan.Change) (send []plan.Change, skipped map[string]error) {
	if len(r.byChange) == 0 {
		return changes, nil
	}
	send = changes[:0:0]
	for _, ch := range changes {
		if err, ok := r.byChange[ch.String()]; ok {
			if skipped == nil {
				skipped = map[string]error{}
			}
			skipped[ch.Hostname()] = err
			continue
		}
		send = append(send, ch)
	}
	return send, skipped
}

// has reports whether c was refused before.
func (r *refused) has(c plan.Change) bool {
	_, ok := r.byChange[c.String()]
	return ok
}

// learn takes one sync's failed writes.
func (r *refused) learn(full bool, failures []*plan.ChangeError) {
	if full || r.byChange == nil {
		r.byChange = map[string]error{}
	}
	for _, ce := range failures {
		if ce.Refused && !ce.Stale {
			r.byChange[ce.Change.String()] = ce
		}
	}
}
