package registry

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Allowance is what a write-rate budget has left: Tokens writes at At, out of Cap (docs/ownership.md).
type Allowance struct {
	Tokens, Cap float64
	At          time.Time
}

// Rates are the allowances left by key ("object/<uid>", "namespace/<name>"); one missing is whole.
type Rates map[string]Allowance

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

// rate holds back the changes of objects and namespaces over their write-rate budgets until the
// allowances cover them, and hands on the allowances as of now, before the writes Record charges.
func (r *Registry) rate(in *changesIn, changes []plan.Change) changed {
	changes = byHostname(changes)
	if len(changes) == 0 || r.cfg.Budgets.ObjectWritesPerMinute == 0 && r.cfg.Budgets.NamespaceWritesPerMinute == 0 {
		return changed{changes: changes}
	}
	// A hostname's changes, changes[start:end], go or wait together; each charged one costs a write.
	type group struct {
		start, end int
		keys       [2]string
		obj        string
		cost       float64
		away       bool // every one takes an entry away
	}
	var groups []group
	cost := map[string]float64{}
	for start, end := 0, 0; start < len(changes); start = end {
		g := group{start: start, away: true}
		for end = start; end < len(changes) && changes[end].Hostname() == changes[start].Hostname(); end++ {
			if charged(&changes[end]) {
				g.cost++
			}
			a := changes[end].Action
			g.away = g.away && (a == plan.Mark || a == plan.Delete || a == plan.Release)
		}
		g.end = end
		if g.cost > 0 {
			ns, obj := turnOf(&changes[start])
			g.obj, g.keys = obj, [2]string{"object/" + obj, "namespace/" + ns}
			for _, k := range g.keys {
				cost[k] += g.cost
			}
		}
		groups = append(groups, g)
	}
	// Each key's allowance now: refilled since last used or, first met, this sync's cost and a budget's
	// worth more; left is what remains as the changes go.
	out, left := changed{rates: make(Rates, len(cost))}, make(map[string]float64, len(cost))
	for key, c := range cost {
		b := r.perMinute(key)
		if b == 0 {
			continue
		}
		a, ok := in.rates[key]
		a.Tokens, a.At = math.Min(a.Cap, a.Tokens+in.now.Sub(a.At).Minutes()*b), in.now
		if !ok {
			a = Allowance{Tokens: b + c, Cap: b + c, At: in.now}
		}
		out.rates[key], left[key] = a, a.Tokens
	}
	held := map[string]bool{}
	var live map[string]bool // the objects some source asks for, made when a change first waits
	for _, g := range groups {
		wait, fits := time.Duration(0), true
		for _, key := range g.keys {
			a, ok := out.rates[key]
			// A hostname that costs more than a whole allowance goes when the allowance is whole.
			if need := math.Min(g.cost, a.Cap); ok && left[key] < need {
				fits = false
				wait = max(wait, time.Duration((need-left[key])/r.perMinute(key)*float64(time.Minute)))
			}
		}
		if !fits && live == nil {
			live = map[string]bool{}
			for _, ep := range in.claims {
				for _, src := range ep.Sources {
					live[src.UID] = true
				}
			}
		}
		// What an object gone (no claim names it) takes away never waits, nor a heartbeat's renewal,
		// or the others would read the installation as silent.
		if !fits && !(g.away && g.obj != "" && !live[g.obj]) {
			due := in.now.Add(wait)
			for _, c := range changes[g.start:g.end] {
				if renews(&c) {
					out.changes = append(out.changes, c)
					continue
				}
				out.held = append(out.held, Held{Change: c, Reason: ReasonOverBudget, Due: due})
				held[g.obj] = true
			}
			out.until(due)
			continue
		}
		out.changes = append(out.changes, changes[g.start:g.end]...)
		for _, key := range g.keys {
			left[key] -= g.cost
		}
	}
	out.paced = len(out.held)
	for i := 0; len(held) > 0 && i < len(in.claims); i++ {
		for _, src := range in.claims[i].Sources {
			if held[src.UID] {
				delete(held, src.UID) // one problem per object
				out.problems = append(out.problems, Problem{Source: src, Kind: ProblemOverBudget, Message: fmt.Sprintf("changes faster than the write-rate budget "+
					"(%d writes a minute for an object, %d for namespace %s): its latest state is written at that rate, and the states between are never written",
					r.cfg.Budgets.ObjectWritesPerMinute, r.cfg.Budgets.NamespaceWritesPerMinute, src.Namespace)})
			}
		}
	}
	return out
}

// Record takes what became of a decision's writes (results[i] of d.Changes[i]) and of the
// compactions it named (compacted, by ID): mem learns them, and the allowances kept for the
// next Decide (not written to) come back charged for those that went through, a compaction as
// one write, less those whole again (charged ones at once, every one on a whole read).
func (r *Registry) Record(d *Decision, results []plan.Result, compacted []Compacted, mem *Memory, kept Rates, wholeRead bool) Rates {
	if mem != nil {
		mem.wrote(d.Changes, results)
		mem.folded(r, d, results, compacted)
	}
	folded := slices.ContainsFunc(compacted, func(c Compacted) bool { return c.Err == nil })
	if len(d.Rates) == 0 && !wholeRead && !folded {
		return kept // nothing to charge or forget: no copy
	}
	left := maps.Clone(d.Rates)
	charge := func(key string) {
		a, ok := left[key]
		if !ok {
			return
		}
		a.Tokens--
		left[key] = a
	}
	for i := range results {
		if c := &d.Changes[i]; results[i].Err == nil && charged(c) {
			ns, obj := turnOf(c)
			charge("object/" + obj)
			charge("namespace/" + ns)
		}
	}
	for _, c := range compacted {
		if c.Err != nil {
			continue
		}
		for _, key := range d.compactKeys[c.ID] {
			// The compact stage took it only from an allowance that was whole: as first met.
			if b := r.perMinute(key); b > 0 {
				if _, ok := left[key]; !ok {
					if left == nil {
						left = Rates{}
					}
					left[key] = Allowance{Tokens: b, Cap: b, At: d.Now}
				}
				charge(key)
			}
		}
	}
	out := make(Rates, len(kept)+len(left))
	maps.Copy(out, kept)
	for key, a := range left {
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
