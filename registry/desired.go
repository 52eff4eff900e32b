package registry

import (
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// mergeSource hands back the merge of a hostname made before from the same claims and entries
// (the Memory's); what desired merges afresh, or finds no longer holds, is in Wanted.Merges.
type mergeSource interface {
	Merged(host string, claims []*endpoint.Endpoint, owned []*endpoint.Record) (out *endpoint.Endpoint, ok bool)
}

// Merge is one hostname's merge and what it was made from.
type Merge struct {
	Host   string
	Claims []*endpoint.Endpoint
	Owned  []*endpoint.Record
	// Out is the endpoint the plan sees; nil when every claim lost.
	Out *endpoint.Endpoint
	// Conflicted: the merge turned claims down or a later stage changed its endpoint, which a
	// merge reused would leave unreported: neither it nor an earlier one is kept. Marked: one of
	// the entries is marked for deletion.
	Conflicted, Marked bool
}

// Wanted is what desired made of the sources' claims: one endpoint per hostname, the claims
// (Conflicts) and parts of claims (Problems) it turned down, and the merges for the Memory.
type Wanted struct {
	Endpoints []*endpoint.Endpoint
	Conflicts []Conflict
	Problems  []Problem
	Merges    []Merge
	// reused are the hostnames whose merge was reused and no later stage changed; adopt the
	// hand-made entries the plan may adopt, by hostname.
	reused []string
	adopt  map[string][]endpoint.Record
}

// Conflict is a claim on a name that lost to the namespace holding it, to another cluster or
// to a hand-made entry.
type Conflict struct {
	// Hostname is the name: the claim's hostname, or one of its aliases (Alias).
	Hostname string
	Alias    bool
	Loser    endpoint.SourceRef
	// Winner names who holds the name: "namespace <ns>", "namespace/name" of the older claim,
	// "cluster <name>" or a hand-made entry.
	Winner string
	// Stage is the claim stage that turned it down; Reason is ReasonHostnameConflict.
	Stage, Reason string
}

// Problem is a part of an object's claim the registry refused to write.
type Problem struct {
	Source endpoint.SourceRef
	// Kind is what was refused, the label of its metric.
	Kind ProblemKind
	// Tag is the reserved user tag dropped.
	Tag, Message string
	// Stage is the stage that refused it (a claim stage, or a change stage that held its
	// write); Reason the word of its Event.
	Stage, Reason string
}

// ProblemKind says what kind of refusal a Problem is: the label of its metric.
type ProblemKind string

// The kinds of the registry's Problems.
const (
	// ProblemReservedTag: a user tag in the operator's namespace, dropped.
	ProblemReservedTag ProblemKind = "ReservedTag"
	// ProblemOutsideDomains: an alias the domain filter does not manage, dropped.
	ProblemOutsideDomains ProblemKind = "OutsideDomains"
	// ProblemNotPermitted: a name the object's namespace may not claim, not written.
	ProblemNotPermitted ProblemKind = "NotPermitted"
	// ProblemGracePeriodCapped: a grace period above the maximum, which applies instead.
	ProblemGracePeriodCapped ProblemKind = "GracePeriodCapped"
	// ProblemOverBudget: an object or namespace over its budget keeps what it has and gets no new name.
	ProblemOverBudget ProblemKind = "OverBudget"
)

// reason is the word of the Event that tells a problem of kind k.
func (k ProblemKind) reason() string {
	switch k {
	case ProblemNotPermitted:
		return ReasonNameNotPermitted
	case ProblemOverBudget:
		return ReasonOverBudget
	}
	return ReasonInvalidAnnotation
}

// ProblemKinds are every kind, in a stable order, for observers that count them all.
func ProblemKinds() []ProblemKind {
	return []ProblemKind{ProblemReservedTag, ProblemOutsideDomains, ProblemNotPermitted, ProblemGracePeriodCapped, ProblemOverBudget}
}

// current is the plan's input: the owned entries but those of settled (lowercase) hostnames,
// the lines this cluster co-owns (coOwned) and the hand-made entries it may adopt. An adopted
// entry keeps the user's tags ahead of the operator's block (TagPreExisting to the loan record);
// a created one its heartbeat and co-owner tags, which pin it to its address, and it yields to
// an older co-owned line it doubles (doublesCoOwned).
func (r *Registry) current(st *State, desired []*endpoint.Endpoint, settled map[string]bool, adopt map[string][]endpoint.Record) []plan.Current {
	out := make([]plan.Current, 0, max(len(st.Owned)-len(settled), 0))
	var shared map[string]bool // desired's shared hostnames other clusters have entries of
	if len(st.Foreign) > 0 {
		for _, ep := range desired {
			if ep.Shared && len(st.Foreign[ep.Hostname]) > 0 {
				lazy(&shared)[ep.Hostname] = true
			}
		}
	}
	for i := range st.Owned {
		rec := st.Owned[i]
		if len(settled) > 0 && settled[strings.ToLower(rec.Hostname)] {
			continue
		}
		c := plan.Current{Record: rec, Owner: endpoint.OwnerThis}
		if v := st.view(&st.Owned[i]); v.has(TagPreExisting) {
			c.Owner, c.Keep = endpoint.OwnerAdopted, append(append([]string{}, v.user...), TagPreExisting)
			if v.loan != nil {
				c.Trail = v.loan.trail()
			}
		} else {
			c.Keep = r.coOwners(&v)
			c.Pinned = len(c.Keep) > 0
			c.Yields = shared[strings.ToLower(rec.Hostname)] && doublesCoOwned(st, &st.Owned[i])
			for _, prefix := range []string{PrefixAlive, PrefixAliveEvery, PrefixAliveInterval} {
				if value, ok := v.value(prefix); ok {
					c.Keep = append(c.Keep, prefix+value)
				}
			}
		}
		out = append(out, c)
	}
	out = append(out, r.coOwned(st, desired, settled)...)
	for _, ep := range desired {
		for _, rec := range adopt[ep.Hostname] {
			out = append(out, plan.Current{Record: rec, Owner: endpoint.OwnerHandMade,
				Keep: append(append([]string{}, rec.Tags...), TagPreExisting), Trail: loanOf(&rec).trail()})
		}
	}
	return out
}

// desired is runClaimStages with claimStages.
func (r *Registry) desired(now time.Time, eps []*endpoint.Endpoint, st *State, merges mergeSource) Wanted {
	return r.runClaimStages(claimStages[:], now, eps, st, merges)
}

// runClaimStages runs the claim stages of table in order over the sources' endpoints (merges,
// may be nil, hands back merges made before); it writes to neither st nor eps.
func (r *Registry) runClaimStages(table []claimStage, now time.Time, eps []*endpoint.Endpoint, st *State, merges mergeSource) Wanted {
	in := &claimsIn{now: now, st: st, owned: ownedByHost(st), car: carriersOf(st), merges: merges}
	var w Wanted
	for _, s := range table {
		v := s.run(r, in, eps)
		for _, c := range v.conflicts {
			c.Stage, c.Reason = s.name, ReasonHostnameConflict
			w.Conflicts = append(w.Conflicts, c)
		}
		for _, p := range v.problems {
			p.Stage, p.Reason = s.name, p.Kind.reason()
			w.Problems = append(w.Problems, p)
		}
		in.change(changedBy(eps, &v))
		eps = v.endpoints
		if v.grouped != nil {
			in.byHost = v.grouped
		}
		if v.adopt != nil {
			w.adopt = v.adopt
		}
		w.Merges = append(w.Merges, v.merges...)
		w.reused = append(w.reused, v.reused...)
	}
	w.Endpoints = eps
	if merges != nil {
		w.Merges = in.unkept(w.Merges)
		w.reused = slices.DeleteFunc(w.reused, func(h string) bool { return in.changed[h] })
	}
	return w
}

// ownedByHost is st's owned entries by lowercase hostname.
func ownedByHost(st *State) map[string][]*endpoint.Record {
	out := make(map[string][]*endpoint.Record, len(st.Owned))
	for i := range st.Owned {
		key := strings.ToLower(st.Owned[i].Hostname)
		out[key] = append(out[key], &st.Owned[i])
	}
	return out
}
