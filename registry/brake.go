package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Brake holds back a mass deletion (a namespace deleted by mistake, a source dropped, a label
// filter's typo): when more than NamespaceShare of one namespace's entries, and at least
// NamespaceMinimum, would be on their way out, or more than Share of the cluster's, and at
// least Minimum, in namespaces each losing more than Share of their own, nothing of the
// namespaces concerned is marked or deleted and no new name is written there, until the user
// confirms that very set (Confirm) or the cause goes away. The share is of the entries before
// the sync, and new names wait with the old: a name replaced is a name leaving. It trips only
// on a sync that would mark, so a burst over two syncs is held whole, and a confirmed set, once
// marked, goes as its grace periods end without asking again.
type Brake struct {
	// Share is the part of the cluster's entries, in (0, 1], beyond which the brake holds;
	// zero turns the cluster's brake off.
	Share float64
	// Minimum is the fewest entries on their way out that can trip it, so that a cluster with
	// a handful of entries never does.
	Minimum int
	// NamespaceShare and NamespaceMinimum are the same for each namespace on its own, so that a
	// namespace deleted by mistake is held however small a part of the cluster, and one
	// tenant's churn neither hides nor holds another's. Zero NamespaceShare turns it off.
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
	for _, c := range []struct {
		of    string
		share float64
		min   int
	}{{"mass-deletion", b.Share, b.Minimum}, {"a namespace's mass-deletion", b.NamespaceShare, b.NamespaceMinimum}} {
		if c.share < 0 || c.share > 1 {
			return fmt.Errorf("%s share %v: want between 0 (off) and 1", c.of, c.share)
		}
		if c.min < 0 {
			return fmt.Errorf("%s minimum %d is negative", c.of, c.min)
		}
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
	var what, names []string
	if b.Cluster {
		what = append(what, fmt.Sprintf("%d of this cluster's %d entries", b.Leaving, b.Owned))
	}
	for _, n := range b.Namespaces {
		names = append(names, n.Name)
		if n.Tripped {
			what = append(what, fmt.Sprintf("%d of namespace %s's %d entries", n.Leaving, n.Name, n.Owned))
		}
	}
	where := "namespaces " + strings.Join(names, ", ")
	if len(names) == 1 {
		where = "namespace " + names[0]
	}
	return fmt.Sprintf("%s would be deleted at once (over the mass-deletion brake); "+
		"none is marked or deleted, and no new name is written in %s, until the cause goes away or the deletion is confirmed with "+
		"--confirm-mass-deletion=%s or the RouterHostsConfig's spec.deletion.brake.confirm: %q",
		strings.Join(what, " and "), where, b.Token, b.Token)
}

// brake holds, when the entries leaving would trip the Brake, the marks, the deletions of
// marked entries and the new names of the namespaces held, and every renewal of the
// heartbeat. A duplicate's deletion, whose address stays served, always goes.
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
		case c.Action == plan.Mark || retiring(&c):
			ns = l.namespaceOf(c.Old)
		case c.Action == plan.Create || c.Action == plan.Adopt:
			// A new name may be the other half of a replacement: it waits, so that the share is
			// still taken against the entries before the change.
			v := viewOf(c.New)
			ns, _ = v.value(PrefixNamespace)
		}
		if beatOnly(&c) || ns != "" && held[ns] {
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
// the mass deletion and the namespaces held. A namespace's own share holds that namespace; the
// cluster's share counts, and holds, only the namespaces not held on their own that lose more
// than that share of their own entries, so that no namespace's everyday deletion holds another
// or spends another's minimum.
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
			maps.Copy(held, counted)
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	braked := &Braked{Cluster: cluster}
	var ids []string
	for _, ns := range slices.Sorted(maps.Keys(held)) {
		n := BrakedNamespace{Name: ns, Leaving: len(l.leaving[ns]), Owned: l.base[ns], Tripped: tripped[ns]}
		braked.Namespaces = append(braked.Namespaces, n)
		braked.Leaving += n.Leaving
		braked.Owned += n.Owned
		ids = slices.AppendSeq(ids, maps.Keys(l.leaving[ns]))
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
	sum := sha256.Sum256([]byte(strings.Join(append(ids, ""), "\n"))) // each ID and a newline
	return strconv.Itoa(len(ids)) + "-" + hex.EncodeToString(sum[:4])
}

// retiring reports whether c deletes or releases an entry at the end of its grace period.
func retiring(c *plan.Change) bool {
	return (c.Action == plan.Delete && !c.Duplicate) || c.Action == plan.Release
}
