package registry

import (
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// mergeSource hands back a hostname's merge made before of the same claims and entries.
type mergeSource interface {
	Merged(host string, claims []*endpoint.Endpoint, owned []*endpoint.Record) (out *endpoint.Endpoint, ok bool)
}

// Merge is one hostname's merge and what it was made from.
type Merge struct {
	Host       string
	Claims     []*endpoint.Endpoint
	Owned      []*endpoint.Record
	Out        *endpoint.Endpoint // the endpoint the plan sees; nil when every claim lost
	Conflicted bool               // claims lost or a later stage changed Out: not kept, so reported again
	Marked     bool               // an entry of Owned is marked for deletion
}

// Wanted is what desired made of the claims: an endpoint per hostname, its refusals, its merges.
type Wanted struct {
	Endpoints []*endpoint.Endpoint
	Conflicts []Conflict
	Problems  []Problem
	Merges    []Merge
	changed   map[string]bool              // the hostnames a stage changed (changedBy)
	adopt     map[string][]endpoint.Record // the hand-made entries the plan may adopt, by hostname
}

// Conflict is a claim on a name that lost to its holder: a namespace, cluster or hand-made entry.
type Conflict struct {
	Hostname      string // the claim's hostname, or one of its aliases (Alias)
	Alias         bool
	Loser         endpoint.SourceRef
	Winner        string // "namespace <ns>", "<ns>/<name>", "cluster <name>" or a hand-made entry
	Stage, Reason string // the claim stage that turned it down; ReasonHostnameConflict
}

// Problem is a part of an object's claim the registry refused to write.
type Problem struct {
	Source        endpoint.SourceRef
	Kind          ProblemKind
	Tag, Message  string // Tag: the reserved user tag dropped
	Stage, Reason string // the claim stage, or change stage that held the write; its Event's word
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
	// ProblemOverBudget: an object or namespace over its budget keeps what it has, no new name.
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

// current is the plan's input: the owned entries but settled hostnames', the co-owned lines, the
// hand-made entries to adopt. An adopted entry keeps the user's tags and loan trail; a created one
// its heartbeat and co-owner tags (pinned), and yields to an older co-owned line it doubles.
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

func (r *Registry) desired(now time.Time, eps []*endpoint.Endpoint, st *State, merges mergeSource) Wanted {
	return r.runClaimStages(claimStages[:], now, eps, st, merges)
}

// runClaimStages runs table's stages in order over eps, writing to neither eps nor st.
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
	}
	w.Endpoints, w.changed = eps, in.changed
	if merges != nil {
		w.Merges = in.unkept(w.Merges)
	}
	return w
}

func ownedByHost(st *State) map[string][]*endpoint.Record {
	out := make(map[string][]*endpoint.Record, len(st.Owned))
	for i := range st.Owned {
		key := strings.ToLower(st.Owned[i].Hostname)
		out[key] = append(out[key], &st.Owned[i])
	}
	return out
}
