package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Brake holds back a mass deletion: a namespace deleted by mistake, a source dropped from the
// flags, a label filter's typo, twenty names replaced by a values typo. When more than
// NamespaceShare of one namespace's entries, and at least NamespaceMinimum, would be on their
// way out, or more than Share of the cluster's entries, and at least Minimum, in namespaces
// each losing more than Share of their own, no entry of the namespaces concerned is marked for
// deletion, none marked before is deleted, and no new name is written there, until the user
// confirms that very set (Confirm holds its token) or the cause goes away. The share is of the entries the router holds before the sync, and the new names
// wait with the old ones: a name replaced by another is a name leaving, whatever the syncs that
// follow find. The brake trips only on a sync that would mark: a burst that reaches the loop in
// two syncs is held whole (the first marks of it are not deleted meanwhile), and a confirmed
// set, once marked, goes as its grace periods end without asking again.
type Brake struct {
	// Share is the part of the cluster's entries, in (0, 1], beyond which the brake holds;
	// zero turns the cluster's brake off.
	Share float64
	// Minimum is the fewest entries on their way out that can trip it, so that a cluster with
	// a handful of entries never does.
	Minimum int
	// NamespaceShare and NamespaceMinimum are the same for each namespace on its own, so that a
	// namespace deleted by mistake is held however small a part of the cluster it is, and one
	// tenant's churn neither hides another's mass deletion nor holds its everyday one. Zero
	// NamespaceShare turns the namespaces' brake off.
	NamespaceShare   float64
	NamespaceMinimum int
	// Confirm is the token of a held deletion the user lets through (Braked.Token).
	Confirm string
}

// DefaultBrake holds a sync that would take more than half of the cluster's entries, or of one
// namespace's, and at least ten: far from everyday churn, which retires a few entries at a time.
func DefaultBrake() Brake {
	return Brake{Share: 0.5, Minimum: 10, NamespaceShare: 0.5, NamespaceMinimum: 10}
}

func checkBrake(b Brake) error {
	if b.Share < 0 || b.Share > 1 {
		return fmt.Errorf("mass-deletion share %v: want between 0 (off) and 1", b.Share)
	}
	if b.Minimum < 0 {
		return fmt.Errorf("mass-deletion minimum %d is negative", b.Minimum)
	}
	if b.NamespaceShare < 0 || b.NamespaceShare > 1 {
		return fmt.Errorf("a namespace's mass-deletion share %v: want between 0 (off) and 1", b.NamespaceShare)
	}
	if b.NamespaceMinimum < 0 {
		return fmt.Errorf("a namespace's mass-deletion minimum %d is negative", b.NamespaceMinimum)
	}
	return nil
}

// Braked is a deletion the brake holds.
type Braked struct {
	// Leaving is the number of entries on their way out (marked, or to be) in the namespaces
	// held, Owned the number of entries they count against (the cluster's when its share
	// tripped, else the namespaces'); Stopped the marks, deletions and new names this sync did
	// not send.
	Leaving, Owned, Stopped int
	// Cluster says the cluster's share tripped; Namespaces are the namespaces held, sorted by
	// name, each with its own count.
	Cluster    bool
	Namespaces []BrakedNamespace
	// Token names this set of entries; confirming it lets exactly this set go.
	Token string
}

// BrakedNamespace is one namespace the brake holds: its entries on their way out, the entries
// it had before the sync, and whether its own share tripped (else the cluster's held it).
type BrakedNamespace struct {
	Name           string
	Leaving, Owned int
	Tripped        bool
}

// Message is what the user is told, with the way to let it through.
func (b *Braked) Message() string {
	var what []string
	if b.Cluster {
		what = append(what, fmt.Sprintf("%d of this cluster's %d entries", b.Leaving, b.Owned))
	}
	for _, n := range b.Namespaces {
		if n.Tripped {
			what = append(what, fmt.Sprintf("%d of namespace %s's %d entries", n.Leaving, n.Name, n.Owned))
		}
	}
	return fmt.Sprintf("%s would be deleted at once (over the mass-deletion brake); "+
		"none is marked or deleted, and no new name is written in %s, until the cause goes away or the deletion is confirmed with "+
		"--confirm-mass-deletion=%s or the RouterHostsConfig's spec.deletion.brake.confirm: %q",
		strings.Join(what, " and "), namespaceList(b.Namespaces), b.Token, b.Token)
}

func namespaceList(ns []BrakedNamespace) string {
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = n.Name
	}
	if len(names) == 1 {
		return "namespace " + names[0]
	}
	return "namespaces " + strings.Join(names, ", ")
}

// brake applies the Brake to a sync's changes: it returns them without the marks, the
// deletions of marked entries, the new names of the namespaces held when the entries leaving
// would trip it and the renewals of the heartbeat, and what it held. Duplicates, whose address stays served, are no deletion of a
// name and always go.
func (r *Registry) brake(in *changesIn, changes []plan.Change) changed {
	b := r.cfg.Brake
	// Only a sync that marks can trip it; the others (most) need not count the entries.
	if (b.Share == 0 && b.NamespaceShare == 0) || !slices.ContainsFunc(changes, func(c plan.Change) bool { return c.Action == plan.Mark }) {
		return changed{changes: changes}
	}
	l := countLeaving(in.st, changes)
	braked, held := b.verdict(l, len(in.st.Owned))
	if braked == nil || b.Confirm == braked.Token {
		return changed{changes: changes}
	}
	out := changed{changes: make([]plan.Change, 0, len(changes)), braked: braked}
	for _, c := range changes {
		ns := ""
		switch {
		case beatOnly(&c):
			out.held = append(out.held, Held{Change: c, Reason: ReasonMassDeletionHeld, Token: braked.Token})
			continue
		case c.Action == plan.Mark || retiring(&c):
			ns = l.namespaceOf(c.Old)
		case c.Action == plan.Create || c.Action == plan.Adopt:
			// A new name in a namespace held may be the other half of a replacement: it waits,
			// so that the entries the share is taken against stay the ones before the change.
			v := viewOf(c.New)
			ns, _ = v.value(PrefixNamespace)
		}
		if ns != "" && held[ns] {
			out.held = append(out.held, Held{Change: c, Reason: ReasonMassDeletionHeld, Token: braked.Token})
			continue
		}
		out.changes = append(out.changes, c)
	}
	braked.Stopped = len(out.held)
	return out
}

// leavingCount is what the brake counts: the entries each namespace had before the sync, the
// IDs of those on their way out after it, and the namespaces the sync marks entries of.
type leavingCount struct {
	st      *State
	base    map[string]int
	leaving map[string]map[string]bool
	marking map[string]bool
}

func (l *leavingCount) namespaceOf(rec *endpoint.Record) string {
	v := l.st.view(rec)
	ns, _ := v.value(PrefixNamespace)
	return ns
}

func (l *leavingCount) leave(ns, id string) {
	if l.leaving[ns] == nil {
		l.leaving[ns] = map[string]bool{}
	}
	l.leaving[ns][id] = true
}

// countLeaving counts, per namespace, the owned entries and those marked once changes are
// applied.
func countLeaving(st *State, changes []plan.Change) *leavingCount {
	l := &leavingCount{st: st, base: map[string]int{}, leaving: map[string]map[string]bool{}, marking: map[string]bool{}}
	for i := range st.Owned {
		rec := &st.Owned[i]
		ns := l.namespaceOf(rec)
		l.base[ns]++
		if st.marked(rec) {
			l.leave(ns, rec.ID)
		}
	}
	for i := range changes {
		switch c := &changes[i]; c.Action {
		case plan.Mark:
			ns := l.namespaceOf(c.Old)
			l.leave(ns, c.Old.ID)
			l.marking[ns] = true
		case plan.Unmark, plan.Update:
			delete(l.leaving[l.namespaceOf(c.Old)], c.Old.ID)
		}
	}
	return l
}

// verdict is what the brake holds of the count, owned entries in all: nil when nothing, else
// the mass deletion and the namespaces held. A namespace's own share trips it for that
// namespace; the cluster's share counts, and holds, only the namespaces not held on their own
// that lose more than that share of their own entries, so that no namespace holds another or
// spends another's minimum.
func (b Brake) verdict(l *leavingCount, owned int) (*Braked, map[string]bool) {
	held := map[string]bool{}
	tripped := map[string]bool{}
	if b.NamespaceShare > 0 {
		for ns := range l.marking {
			if n := len(l.leaving[ns]); n >= b.NamespaceMinimum && float64(n) > b.NamespaceShare*float64(l.base[ns]) {
				held[ns], tripped[ns] = true, true
			}
		}
	}
	cluster := false
	if b.Share > 0 {
		// Only a namespace losing more than the share of its own entries counts, and only the
		// namespaces counted are held: a namespace's everyday deletion neither spends the
		// minimum of the others nor is held with them.
		counted := map[string]bool{}
		rest, marks := 0, false
		for ns, ids := range l.leaving {
			most := float64(len(ids)) > b.Share*float64(l.base[ns])
			if !tripped[ns] && len(ids) > 0 && (most || mutation == "cluster-brake-counts-all") {
				counted[ns] = true
				rest += len(ids)
				marks = marks || l.marking[ns]
			}
		}
		if marks && rest >= b.Minimum && float64(rest) > b.Share*float64(owned) {
			cluster = true
			for ns := range counted {
				held[ns] = true
			}
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	braked := &Braked{Cluster: cluster}
	var ids []string
	for _, ns := range sortedKeys(held) {
		n := BrakedNamespace{Name: ns, Leaving: len(l.leaving[ns]), Owned: l.base[ns], Tripped: tripped[ns]}
		braked.Namespaces = append(braked.Namespaces, n)
		braked.Leaving += n.Leaving
		braked.Owned += n.Owned
		for id := range l.leaving[ns] {
			ids = append(ids, id)
		}
	}
	if cluster {
		braked.Owned = owned
	}
	braked.Token = brakeToken(ids)
	return braked, held
}

// brakeToken names exactly one set of entries leaving: their number and a hash of their IDs.
func brakeToken(ids []string) string {
	slices.Sort(ids)
	sum := sha256.New()
	for _, id := range ids {
		sum.Write([]byte(id + "\n"))
	}
	return strconv.Itoa(len(ids)) + "-" + hex.EncodeToString(sum.Sum(nil))[:8]
}

// retiring reports whether c deletes or releases an entry at the end of its grace period.
func retiring(c *plan.Change) bool {
	return (c.Action == plan.Delete && !c.Duplicate) || c.Action == plan.Release
}
