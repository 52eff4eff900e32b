package registry

import (
	"slices"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// grace turns a planned delete into a pending-deletion mark, and deletes the entry (releases an
// adopted one) once the mark is older than its grace period; a duplicate, or an entry on a name
// another cluster holds, goes at once. An update of a marked entry lifts the mark: an unmark.
func (r *Registry) grace(in *changesIn, changes []plan.Change) changed {
	if !slices.ContainsFunc(changes, func(c plan.Change) bool { return c.Action == plan.Update || c.Action == plan.Delete }) {
		return changed{changes: changes} // creates and adoptions only: a cold start
	}
	v := changed{changes: make([]plan.Change, 0, len(changes))}
	for _, c := range changes {
		if c.Action == plan.Update && in.st.marked(c.Old) {
			c.Action = plan.Unmark
		}
		if c.Action != plan.Delete {
			v.changes = append(v.changes, c)
			continue
		}
		cv := in.st.view(c.Old)
		due, marked := r.due(&cv)
		switch {
		case (c.Duplicate || yielded(in.st, c.Old)) && !cv.has(TagPreExisting):
			v.changes = append(v.changes, c)
		case !marked: // or the mark mangled by hand: the grace period starts now
			n := *c.Old
			n.Tags = withOwnTag(n.Tags, &cv, PrefixPending, PrefixPending+in.now.UTC().Format(time.RFC3339))
			if in.st.parser.parse(c.Old).class == endpoint.OwnerNamesake { // else a namesake's mark, never due
				for _, t := range [...][2]string{{PrefixCluster, r.clusterTag}, {PrefixClusterID, IdentityTag(r.cfg.ClusterID)}} {
					nv := viewOf(&n)
					n.Tags = withOwnTag(n.Tags, &nv, t[0], t[1])
				}
			}
			due := in.now.Add(r.gracePeriod(&cv))
			v.changes = append(v.changes, plan.Change{Action: plan.Mark, Old: c.Old, New: &n, Due: due})
			v.until(due)
		case in.now.Before(due):
			v.held = append(v.held, Held{Change: c, Reason: ReasonGracePeriod, Due: due})
			v.until(due)
		case in.st.witness.Waits(c.Old.ID): // due, but a twin may want it: the next whole reads tell
			v.held = append(v.held, Held{Change: c, Reason: ReasonGracePeriod})
		case cv.has(TagPreExisting):
			v.changes = append(v.changes, plan.Change{Action: plan.Release, Old: c.Old, New: released(c.Old, &cv)})
		default:
			v.changes = append(v.changes, plan.Change{Action: plan.Delete, Old: c.Old})
		}
	}
	return v
}

// until makes due the stage's next time, when it is the earliest yet.
func (v *changed) until(due time.Time) {
	if v.next.IsZero() || due.Before(v.next) {
		v.next = due
	}
}

// released is an adopted entry given back: the user's own tags in their order, and the address,
// spelling and aliases its loan recorded (one adopted before loans keeps its own).
func released(rec *endpoint.Record, v *view) *endpoint.Record {
	n := *rec
	n.Tags = append([]string{}, v.user...)
	if v.loan != nil {
		n.IP, n.Hostname, n.Aliases = v.loan.ip, v.loan.hostname, append([]string{}, v.loan.aliases...)
	}
	return &n
}

// due is when the entry's deletion mark falls due; marked is false for no mark or a mangled one.
func (r *Registry) due(v *view) (due time.Time, marked bool) {
	raw, ok := v.value(PrefixPending)
	markedAt, err := time.Parse(time.RFC3339, raw)
	if !ok || err != nil {
		return time.Time{}, false
	}
	return markedAt.Add(r.gracePeriod(v)), true
}

// gracePeriod is the entry's own grace-period tag (an object's override survives the object),
// capped at the maximum so that a lower maximum reaches entries written before; else the default.
func (r *Registry) gracePeriod(v *view) time.Duration {
	if s, ok := v.value(PrefixGracePeriod); ok {
		if d, err := time.ParseDuration(s + "s"); err == nil && d >= 0 {
			return r.ten.capGrace(d)
		}
	}
	return r.cfg.GracePeriod
}
