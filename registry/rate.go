package registry

import (
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// The write-rate budgets. The server replays every write it keeps at each later call, so an
// object that flaps slows the router down for good. Each object and namespace has an allowance
// that refills at its budget a minute, up to what it first wrote at once and a budget's worth
// more, so a whole object or a cold start is never held. Every write counts, whatever its kind
// (a heartbeat's renewal is charged to its carrier's object), so a grace period of 0 makes no
// flap free. A hostname's changes go when both allowances cover them, else wait, and the sync
// that finds allowance writes the latest state: a flap is coalesced, not replayed. The
// removals of an object that is gone never wait: they overdraw, and hold back later writes.

// Allowance is what one object's or namespace's budget has left: Tokens writes at At, out of
// Cap.
type Allowance struct {
	Tokens, Cap float64
	At          time.Time
}

// Rates are the allowances the write-rate budgets have left, by key ("object/<uid>",
// "namespace/<name>"); a key missing has its whole allowance.
type Rates map[string]Allowance

// pacing is what the write-rate budgets made of a sync's changes: Send within the budgets, in
// the plan's order; Held those that wait, Held[i] until due[i], the first until Next; Rates the
// allowances at this sync's time and before its writes (Record charges them); Problems one
// OverBudget per object held back.
type pacing struct {
	Send, Held []plan.Change
	Rates      Rates
	Problems   []Problem
	Next       time.Time
	due        []time.Time
}

// paceGroup is one hostname's changes, changes[start:end]: planned against each other, they go
// or wait together, each charged write costing one to keys (its object's and namespace's).
// away: every change takes an entry away (a mark, a deletion, a release).
type paceGroup struct {
	start, end int
	keys       [2]string
	obj        string
	cost       float64
	away       bool
}

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
			a := changes[i].Action
			g.away = g.away && (a == plan.Mark || a == plan.Delete || a == plan.Release)
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

// perMinute is the write-rate budget of key's kind; zero is none.
func (r *Registry) perMinute(key string) float64 {
	if strings.HasPrefix(key, "namespace/") {
		return float64(r.cfg.Budgets.NamespaceWritesPerMinute)
	}
	return float64(r.cfg.Budgets.ObjectWritesPerMinute)
}

// charged reports whether c counts against the write-rate budgets: every write does.
func charged(c *plan.Change) bool {
	return mutation != "free-deletions" || c.Action == plan.Create || c.Action == plan.Update || c.Action == plan.Adopt || c.Action == plan.Unmark
}

// renews reports whether c writes a heartbeat the entry did not carry.
func renews(c *plan.Change) bool {
	if c.New == nil {
		return false
	}
	mark, ok := c.New.TagValue(PrefixAlive)
	if !ok || c.Old == nil {
		return ok
	}
	was, _ := c.Old.TagValue(PrefixAlive)
	return was != mark
}

// pace holds back, at now and from the allowances rates left, the changes of objects and
// namespaces that write faster than their budgets; claims (the sources' endpoints) tell the
// objects that exist, and name those held back in their problems.
func (r *Registry) pace(now time.Time, changes []plan.Change, claims []*endpoint.Endpoint, rates Rates) pacing {
	if r.cfg.Budgets.ObjectWritesPerMinute == 0 && r.cfg.Budgets.NamespaceWritesPerMinute == 0 {
		return pacing{Send: changes}
	}
	groups, cost := paceGroups(changes)
	// Each key's allowance at now: refilled since last used, or, first met, what it writes in
	// this sync and a budget's worth more. left is what remains as the changes go in turn.
	out := pacing{Rates: make(Rates, len(cost))}
	left := make(map[string]float64, len(cost))
	for key, c := range cost {
		b := r.perMinute(key)
		if b == 0 {
			continue
		}
		a, ok := rates[key]
		if ok {
			a.Tokens, a.At = math.Min(a.Cap, a.Tokens+now.Sub(a.At).Minutes()*b), now
		} else {
			a = Allowance{Tokens: b + c, Cap: b + c, At: now}
		}
		out.Rates[key], left[key] = a, a.Tokens
	}
	held := map[string]bool{}
	var live map[string]bool // the objects some source asks for, made when a change first waits
	for _, g := range groups {
		var wait time.Duration
		fits := true
		for _, key := range g.keys {
			a, ok := out.Rates[key]
			// A hostname that costs more than a whole allowance goes when the allowance is whole.
			if need := math.Min(g.cost, a.Cap); ok && left[key] < need {
				fits = false
				wait = max(wait, time.Duration((need-left[key])/r.perMinute(key)*float64(time.Minute)))
			}
		}
		if !fits && live == nil {
			live = map[string]bool{}
			for _, ep := range claims {
				for _, src := range ep.Sources {
					live[src.UID] = true
				}
			}
		}
		// What an object gone (not one whose claim a stage refused) takes away never waits; an
		// entry that names no object is paced as any.
		if !fits && !(g.away && g.obj != "" && !live[g.obj]) {
			// A renewal of the heartbeat is charged but never waits, or the others would read
			// the installation as silent.
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
			if _, ok := left[key]; ok {
				left[key] -= g.cost
			}
		}
	}
	for i := 0; len(held) > 0 && i < len(claims); i++ {
		for _, src := range claims[i].Sources {
			if held[src.UID] {
				delete(held, src.UID) // one problem per object
				out.Problems = append(out.Problems, Problem{Source: src, Kind: ProblemOverBudget, Message: fmt.Sprintf(
					"changes faster than the write-rate budget (%d writes a minute for an object, %d for namespace %s): "+
						"its latest state is written at that rate, and the states between are never written",
					r.cfg.Budgets.ObjectWritesPerMinute, r.cfg.Budgets.NamespaceWritesPerMinute, src.Namespace)})
			}
		}
	}
	return out
}

// rate is the write-rate budgets' stage: the changes of an object or namespace beyond its
// allowance wait, each until the allowances cover its hostname's changes.
func (r *Registry) rate(in *changesIn, changes []plan.Change) changed {
	if len(changes) == 0 {
		return changed{changes: changes}
	}
	p := r.pace(in.now, byHostname(changes), in.claims, in.rates)
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
// (wholeRead) every one, so that an object gone leaves nothing behind; an overdrawn one is kept
// until it is whole. kept is not written to.
func (r *Registry) Record(d *Decision, results []plan.Result, mem *Memory, kept Rates, wholeRead bool) Rates {
	if mem != nil {
		mem.wrote(d.Changes, results)
	}
	charged := r.charge(d.Rates, d.Changes, results)
	if len(charged) == 0 && !wholeRead {
		return kept // nothing to charge or forget: no copy
	}
	out := make(Rates, len(kept)+len(charged))
	maps.Copy(out, kept)
	for key, a := range charged {
		out[key] = a
		if a.Tokens >= a.Cap {
			delete(out, key)
		}
	}
	if wholeRead {
		maps.DeleteFunc(out, func(key string, a Allowance) bool {
			b := r.perMinute(key)
			return b == 0 || a.Tokens+d.Now.Sub(a.At).Minutes()*b >= a.Cap
		})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// charge is rates (a pacing's) less the writes of sent that went through (results[i] of
// sent[i]): a write refused, failed or not started spends nothing. An allowance may be
// overdrawn: what an object gone wrote, or a hostname that costs more than a whole allowance.
func (r *Registry) charge(rates Rates, sent []plan.Change, results []plan.Result) Rates {
	if len(rates) == 0 {
		return nil
	}
	out := maps.Clone(rates)
	for i := range results {
		if c := &sent[i]; results[i].Err == nil && charged(c) {
			ns, obj := turnOf(c)
			for _, key := range [2]string{"object/" + obj, "namespace/" + ns} {
				if a, ok := out[key]; ok {
					a.Tokens--
					out[key] = a
				}
			}
		}
	}
	return out
}
