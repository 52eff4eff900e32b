package registry

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// The write-rate budgets. Every write is an event the server keeps and replays at each later
// call, so an object that flaps (an address that changes every second, a hostname that comes
// and goes) is a router that slows down for good. Each object and each namespace has an
// allowance of writes that refills at its budget a minute, up to what it first wrote at once and
// a budget's worth more, so that writing a whole object, or a namespace at a cold start, is
// never held back, nor the everyday changes that follow it. Every write counts, whatever its
// kind: a mark, an unmark, a deletion and a renewal of the heartbeat on its own (charged to
// its carrier's object) as much as a create, so a grace period of 0 makes no flap free. A
// hostname's changes go when the allowances of its object and its namespace cover them, and
// wait otherwise: the sync that finds enough allowance writes the latest state, so a flap is
// coalesced rather than replayed. The marks, deletions and releases of an object that is gone
// never wait: they overdraw the allowances, so a namespace deleted goes at once, and what it
// spent holds back its later writes instead.

// Allowance is what one object's or namespace's budget has left: Tokens writes at At, out of
// Cap.
type Allowance struct {
	Tokens, Cap float64
	At          time.Time
}

// Rates are the allowances the write-rate budgets have left, by key ("object/<uid>",
// "namespace/<name>"); a key missing has its whole allowance.
type Rates map[string]Allowance

// pacing is what the write-rate budgets made of a sync's changes (pace).
type pacing struct {
	// Send are the changes within the budgets, in the plan's order; Held those that wait,
	// whose hostnames' latest state a later sync writes.
	Send, Held []plan.Change
	// Rates are the allowances, at this sync's time and before its writes, of the objects and
	// namespaces it would write: Record charges them with what went through, and the caller
	// keeps them for the next sync beside those it did not touch.
	Rates Rates
	// Problems are one OverBudget per object held back.
	Problems []Problem
	// Next is when the allowances cover the first change held, zero when none is.
	Next time.Time
	// due[i] is when the allowances cover Held[i].
	due []time.Time
}

// paceGroup is one hostname's changes, changes[start:end]: they go or wait together, since
// they are planned against each other. They cost one write each that is charged, to the
// allowances of keys, the object's and the namespace's.
type paceGroup struct {
	start, end int
	keys       [2]string
	obj        string
	cost       float64
	// away: every change takes an entry away (a mark, a deletion, a release).
	away bool
}

// gone reports whether g only takes away what an object left that asks for nothing any more
// (live are the objects that do): such writes never wait. An entry that names no object (one
// taken up from an earlier version) is paced as any.
func (g *paceGroup) gone(live map[string]bool) bool { return g.away && g.obj != "" && !live[g.obj] }

// paceGroups are the hostnames' groups of changes in order, and what they cost each key.
func paceGroups(changes []plan.Change) ([]paceGroup, map[string]float64) {
	var groups []paceGroup
	cost := map[string]float64{}
	for start := 0; start < len(changes); {
		end := start + 1
		for end < len(changes) && changes[end].Hostname() == changes[start].Hostname() {
			end++
		}
		g := paceGroup{start: start, end: end, away: true}
		for i := start; i < end; i++ {
			if charged(&changes[i]) {
				g.cost++
			}
			switch changes[i].Action {
			case plan.Mark, plan.Delete, plan.Release:
			default:
				g.away = false
			}
		}
		if g.cost > 0 {
			ns, obj := turnOf(&changes[start])
			g.obj, g.keys = obj, [2]string{"object/" + obj, "namespace/" + ns}
			for _, k := range g.keys {
				cost[k] += g.cost
			}
		}
		groups = append(groups, g)
		start = end
	}
	return groups, cost
}

// allowances are every key's allowance at now: refilled since it was last used, or whole; a
// key first met may write at once whatever it writes in this sync (cost), and a budget's worth
// more.
func allowances(now time.Time, cost map[string]float64, rates Rates, budgets map[string]float64) Rates {
	out := make(Rates, len(cost))
	for key, c := range cost {
		b := budgets[kindOf(key)]
		if b == 0 {
			continue
		}
		if a, ok := rates[key]; ok {
			a.Tokens, a.At = math.Min(a.Cap, a.Tokens+now.Sub(a.At).Minutes()*b), now
			out[key] = a
			continue
		}
		out[key] = Allowance{Tokens: b + c, Cap: b + c, At: now}
	}
	return out
}

// charged reports whether c counts against the write-rate budgets: every write does.
func charged(c *plan.Change) bool {
	if mutation == "free-deletions" {
		switch c.Action {
		case plan.Create, plan.Update, plan.Adopt, plan.Unmark:
			return true
		}
		return false
	}
	return true
}

// renews reports whether c writes a heartbeat the entry did not carry.
func renews(c *plan.Change) bool {
	if c.New == nil {
		return false
	}
	mark, ok := c.New.TagValue(PrefixAlive)
	if !ok {
		return false
	}
	if c.Old != nil {
		if was, _ := c.Old.TagValue(PrefixAlive); was == mark {
			return false
		}
	}
	return true
}

// liveObjects are the UIDs of the objects that claim something.
func liveObjects(claims []*endpoint.Endpoint) map[string]bool {
	out := map[string]bool{}
	for _, ep := range claims {
		for _, src := range ep.Sources {
			out[src.UID] = true
		}
	}
	return out
}

// pace holds back the changes of objects and namespaces that write faster than their budgets,
// at time now, from the allowances rates left; claims (the sources' endpoints) tell the objects
// that exist, and name those held back in their problems.
func (r *Registry) pace(now time.Time, changes []plan.Change, claims []*endpoint.Endpoint, rates Rates) pacing {
	budgets := map[string]float64{"object": float64(r.cfg.Budgets.ObjectWritesPerMinute), "namespace": float64(r.cfg.Budgets.NamespaceWritesPerMinute)}
	if budgets["object"] == 0 && budgets["namespace"] == 0 {
		return pacing{Send: changes}
	}
	groups, cost := paceGroups(changes)
	out := pacing{Rates: allowances(now, cost, rates, budgets)}
	// left is what the allowances have left as the sync's changes are taken in turn; the
	// allowances returned are charged only with what went through (Record).
	left := make(map[string]float64, len(out.Rates))
	for key, a := range out.Rates {
		left[key] = a.Tokens
	}
	held := map[string]bool{}
	var live map[string]bool // made when a change first waits, which is seldom
	for _, g := range groups {
		var wait time.Duration
		fits := true
		for _, key := range g.keys {
			a, ok := out.Rates[key]
			a.Tokens = left[key]
			if g.cost == 0 || !ok {
				continue
			}
			// A hostname that costs more than a whole allowance goes when the allowance is whole.
			if need := math.Min(g.cost, a.Cap); a.Tokens < need {
				fits = false
				wait = max(wait, time.Duration((need-a.Tokens)/budgets[kindOf(key)]*float64(time.Minute)))
			}
		}
		if !fits && live == nil {
			live = liveObjects(claims)
		}
		if !fits && !g.gone(live) {
			// A write that renews the heartbeat is charged but never waits: one a quarter of
			// the threshold, it must reach the router, or the others read the installation as
			// silent.
			next := now.Add(wait)
			for _, c := range changes[g.start:g.end] {
				if renews(&c) {
					out.Send = append(out.Send, c)
					continue
				}
				out.Held = append(out.Held, c)
				out.due = append(out.due, next)
				held[g.obj] = true
			}
			if out.Next.IsZero() || next.Before(out.Next) {
				out.Next = next
			}
			continue
		}
		out.Send = append(out.Send, changes[g.start:g.end]...)
		for _, key := range g.keys {
			if _, ok := out.Rates[key]; ok && g.cost > 0 {
				left[key] -= g.cost
			}
		}
	}
	out.Problems = r.pacedProblems(held, claims)
	return out
}

// rate is the write-rate budgets' stage: the changes of an object or namespace beyond
// its allowance wait, each until the allowances cover its hostname's changes.
func (r *Registry) rate(in *changesIn, changes []plan.Change) changed {
	if len(changes) == 0 {
		return changed{changes: changes}
	}
	// pace takes a hostname's changes together, so they must be next to each other.
	if !slices.IsSortedFunc(changes, func(a, b plan.Change) int { return strings.Compare(a.Hostname(), b.Hostname()) }) {
		changes = slices.Clone(changes)
		plan.Sort(changes)
	}
	// An object is gone when no source asks for it any more: one whose claim a stage refused
	// still exists, and its removals wait like its other writes.
	p := r.pace(in.now, changes, in.claims, in.rates)
	v := changed{changes: p.Send, rates: p.Rates, problems: p.Problems, next: p.Next, paced: len(p.Held)}
	for i, c := range p.Held {
		v.held = append(v.held, Held{Change: c, Reason: ReasonOverBudget, Due: p.due[i]})
	}
	return v
}

// Record takes what became of the writes a decision sent (results[i] of d.Changes[i]; nil when
// nothing was written): mem learns them, and the write-rate allowances the caller keeps between
// syncs (kept, which it hands to the next Decide) come back charged for the writes that went
// through. An allowance whole again is forgotten: a charged one at once, and on a whole read
// (wholeRead) every one, so that an object gone leaves nothing behind. An overdrawn allowance
// (what a namespace deleted spent) is kept like any other until it is whole. kept is not
// written to.
func (r *Registry) Record(d *Decision, results []plan.Result, mem *Memory, kept Rates, wholeRead bool) Rates {
	if mem != nil {
		mem.wrote(d.Changes, results)
	}
	charged := r.charge(d.Rates, d.Changes, results)
	if len(charged) == 0 && !wholeRead {
		// Nothing to charge or forget (a sync that wrote nothing): no copy.
		return kept
	}
	out := make(Rates, len(kept)+len(charged))
	for key, a := range kept {
		out[key] = a
	}
	for key, a := range charged {
		if a.Tokens >= a.Cap {
			delete(out, key)
			continue
		}
		out[key] = a
	}
	if wholeRead {
		for key, a := range out {
			if r.whole(key, a, d.Now) {
				delete(out, key)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// charge is rates (a pacing's) less the writes of sent that went through (results[i] is what
// became of sent[i]; nil when nothing was written): a write refused, failed or not started
// spends nothing. An allowance may be overdrawn (Tokens below 0: what an object gone wrote, or a
// hostname that costs more than a whole allowance); one whole (Tokens at Cap) may be forgotten.
func (r *Registry) charge(rates Rates, sent []plan.Change, results []plan.Result) Rates {
	if len(rates) == 0 {
		return nil
	}
	out := make(Rates, len(rates))
	for key, a := range rates {
		out[key] = a
	}
	for i := range results {
		c := &sent[i]
		if results[i].Err != nil || !charged(c) {
			continue
		}
		ns, obj := turnOf(c)
		for _, key := range [2]string{"object/" + obj, "namespace/" + ns} {
			if a, ok := out[key]; ok {
				a.Tokens--
				out[key] = a
			}
		}
	}
	return out
}

// whole reports whether the allowance of key is whole again at now, and may be forgotten: a key
// missing has its whole allowance.
func (r *Registry) whole(key string, a Allowance, now time.Time) bool {
	b := float64(r.cfg.Budgets.ObjectWritesPerMinute)
	if kindOf(key) == "namespace" {
		b = float64(r.cfg.Budgets.NamespaceWritesPerMinute)
	}
	return b == 0 || a.Tokens+now.Sub(a.At).Minutes()*b >= a.Cap
}

func kindOf(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i]
		}
	}
	return key
}

// pacedProblems are the OverBudget problems of the objects held back.
func (r *Registry) pacedProblems(held map[string]bool, desired []*endpoint.Endpoint) []Problem {
	if len(held) == 0 {
		return nil
	}
	var out []Problem
	seen := map[string]bool{}
	for _, ep := range desired {
		for _, src := range ep.Sources {
			if !held[src.UID] || seen[src.UID] {
				continue
			}
			seen[src.UID] = true
			out = append(out, Problem{Source: src, Kind: ProblemOverBudget, Message: fmt.Sprintf(
				"changes faster than the write-rate budget (%d writes a minute for an object, %d for namespace %s): "+
					"its latest state is written at that rate, and the states between are never written",
				r.cfg.Budgets.ObjectWritesPerMinute, r.cfg.Budgets.NamespaceWritesPerMinute, src.Namespace)})
		}
	}
	return out
}
