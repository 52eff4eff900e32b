package registry

import (
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Result is the registry's verdict on one plan.
type Result struct {
	// Changes are the writes to send, sorted like the plan's.
	Changes []plan.Change
	// NextExpiry is the earliest time a pending deletion falls due after this sync, zero when
	// none is pending; the controller schedules a sync then so deletions happen on time.
	NextExpiry time.Time
	// Pending is the number of owned entries marked for deletion once Changes are applied.
	Pending int
}

// Apply turns the plan's changes into what is safe to write at time now. A create whose
// hostname exists as an unowned entry adopts that entry instead; a delete becomes a durable
// pending-deletion mark, and only a mark older than its grace period deletes (or, for an
// adopted entry, releases it to the user); an update that only lifts a mark is an unmark.
func (r *Registry) Apply(now time.Time, st *State, desired []*endpoint.Endpoint, changes []plan.Change) Result {
	res := Result{}
	adopted := map[string]bool{}
	deleted := map[string]bool{}
	for _, c := range changes {
		switch c.Action {
		case plan.Create:
			if cand := r.adoptable(st, c.New, adopted); cand != nil {
				if r.cfg.Policy == plan.CreateOnly {
					r.log.WithFields(logrus.Fields{"hostname": c.New.Hostname, "id": cand.ID}).
						Warn("hostname exists as an entry the operator does not own; create-only policy forbids adopting it")
					continue
				}
				adopted[cand.ID] = true
				res.Changes = append(res.Changes, plan.Change{Action: plan.Adopt, Old: cand, New: adoptRecord(cand, c.New)})
				continue
			}
			res.Changes = append(res.Changes, c)
		case plan.Update:
			if _, marked := c.Old.TagValue(PrefixPending); marked {
				if _, still := c.New.TagValue(PrefixPending); !still {
					c.Action = plan.Unmark
				}
			}
			res.Changes = append(res.Changes, c)
		case plan.Delete:
			out, expiry := r.retire(now, c.Old)
			if out != nil {
				res.Changes = append(res.Changes, *out)
				if out.Action == plan.Delete || out.Action == plan.Release {
					deleted[c.Old.ID] = true
				}
			}
			if !expiry.IsZero() && (res.NextExpiry.IsZero() || expiry.Before(res.NextExpiry)) {
				res.NextExpiry = expiry
			}
		}
	}
	res.Changes = append(res.Changes, r.unmarkHeld(st, desired)...)
	plan.Sort(res.Changes)
	res.Pending = r.pendingAfter(st, res.Changes, deleted)
	return res
}

// adoptable returns the unowned entry a create should take over, preferring one with the
// same IP, or nil when there is none.
func (r *Registry) adoptable(st *State, want *endpoint.Record, taken map[string]bool) *endpoint.Record {
	var pick *endpoint.Record
	for i := range st.Unowned[want.Hostname] {
		cand := &st.Unowned[want.Hostname][i]
		if taken[cand.ID] {
			continue
		}
		if cand.IP == want.IP {
			return cand
		}
		if pick == nil || cand.ID < pick.ID {
			pick = cand
		}
	}
	return pick
}

// adoptRecord is cand after adoption: the wanted IP and aliases, the ownership tags, and the
// entry's own tags and comment kept, marked pre-existing so it is released, not deleted.
func adoptRecord(cand, want *endpoint.Record) *endpoint.Record {
	n := *cand
	n.IP, n.Aliases = want.IP, want.Aliases
	var tags []string
	for _, t := range want.Tags {
		if operatorTag(t) {
			tags = append(tags, t)
		}
	}
	n.Tags = endpoint.SortedUnique(append(append(tags, cand.Tags...), TagPreExisting))
	return &n
}

// retire decides what a planned delete of rec means now: a mark, nothing yet, or the
// deletion (release) itself. It returns the change, if any, and when the mark falls due if
// that is still in the future.
func (r *Registry) retire(now time.Time, rec *endpoint.Record) (*plan.Change, time.Time) {
	grace := r.gracePeriod(rec)
	raw, marked := rec.TagValue(PrefixPending)
	markedAt, err := time.Parse(time.RFC3339, raw)
	if !marked || err != nil {
		// Not yet marked (or the mark was mangled by hand): start the grace period now.
		n := *rec
		n.Tags = endpoint.SortedUnique(append(withoutPrefix(rec.Tags, PrefixPending), PrefixPending+now.UTC().Format(time.RFC3339)))
		return &plan.Change{Action: plan.Mark, Old: rec, New: &n}, now.Add(grace)
	}
	due := markedAt.Add(grace)
	if now.Before(due) {
		return nil, due
	}
	if rec.HasTag(TagPreExisting) {
		n := *rec
		n.Tags = endpoint.SortedUnique(userTags(rec.Tags))
		return &plan.Change{Action: plan.Release, Old: rec, New: &n}, time.Time{}
	}
	return &plan.Change{Action: plan.Delete, Old: rec}, time.Time{}
}

// gracePeriod is the entry's own grace-period tag if it has one (so a per-object override
// survives the object), else the configured default.
func (r *Registry) gracePeriod(rec *endpoint.Record) time.Duration {
	if v, ok := rec.TagValue(PrefixGracePeriod); ok {
		if d, err := time.ParseDuration(v + "s"); err == nil && d >= 0 {
			return d
		}
	}
	return r.cfg.GracePeriod
}

// unmarkHeld lifts pending marks from entries of hostnames that are wanted but held: the
// hostname is claimed again, so its entries must not expire while its address is unknown.
func (r *Registry) unmarkHeld(st *State, desired []*endpoint.Endpoint) []plan.Change {
	held := map[string]bool{}
	for _, ep := range desired {
		if ep.Held() {
			held[ep.Hostname] = true
		}
	}
	var out []plan.Change
	for i := range st.Owned {
		rec := &st.Owned[i]
		if !held[rec.Hostname] {
			continue
		}
		if _, marked := rec.TagValue(PrefixPending); marked {
			n := *rec
			n.Tags = withoutPrefix(rec.Tags, PrefixPending)
			out = append(out, plan.Change{Action: plan.Unmark, Old: rec, New: &n})
		}
	}
	return out
}

// pendingAfter counts owned entries that carry a mark once changes are applied.
func (r *Registry) pendingAfter(st *State, changes []plan.Change, deleted map[string]bool) int {
	marked := map[string]bool{}
	for _, rec := range st.Owned {
		if _, ok := rec.TagValue(PrefixPending); ok {
			marked[rec.ID] = true
		}
	}
	for _, c := range changes {
		switch c.Action {
		case plan.Mark:
			marked[c.Old.ID] = true
		case plan.Unmark, plan.Update:
			if _, ok := c.New.TagValue(PrefixPending); !ok {
				delete(marked, c.Old.ID)
			}
		}
	}
	for id := range deleted {
		delete(marked, id)
	}
	return len(marked)
}

func withoutPrefix(tags []string, prefix string) []string {
	var out []string
	for _, t := range tags {
		if len(t) < len(prefix) || t[:len(prefix)] != prefix {
			out = append(out, t)
		}
	}
	return out
}
