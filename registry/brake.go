package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Brake holds back a mass deletion, and the new names of the namespaces concerned, until the user
// confirms that very set or the cause goes away (docs/ownership.md, The mass-deletion brake).
type Brake struct {
	// Share is the part of the cluster's entries, in (0, 1], leaving beyond which the brake holds
	// (zero: off), once at least Minimum leave; NamespaceShare and NamespaceMinimum, of a namespace's.
	Share, NamespaceShare     float64
	Minimum, NamespaceMinimum int
	Confirm                   string // the token of a held deletion the user lets through (Braked.Token)
}

// DefaultBrake holds more than half of the cluster's or a namespace's entries, and at least ten.
func DefaultBrake() Brake {
	return Brake{Share: 0.5, Minimum: 10, NamespaceShare: 0.5, NamespaceMinimum: 10}
}

func checkBrake(b Brake) error {
	switch {
	case b.Share < 0 || b.Share > 1:
		return fmt.Errorf("mass-deletion share %v: want between 0 (off) and 1", b.Share)
	case b.Minimum < 0:
		return fmt.Errorf("mass-deletion minimum %d is negative", b.Minimum)
	case b.NamespaceShare < 0 || b.NamespaceShare > 1:
		return fmt.Errorf("a namespace's mass-deletion share %v: want between 0 (off) and 1", b.NamespaceShare)
	case b.NamespaceMinimum < 0:
		return fmt.Errorf("a namespace's mass-deletion minimum %d is negative", b.NamespaceMinimum)
	}
	return nil
}

// Braked is a deletion the brake holds: Leaving the entries on their way out (marked, or to be)
// in the namespaces held, Owned those they count against (the cluster's when its share tripped:
// Cluster), Stopped the changes held, and Token the name of this set, which confirming lets go.
type Braked struct {
	Leaving, Owned, Stopped int
	Cluster                 bool
	Namespaces              []BrakedNamespace // sorted by name
	Token                   string
}

// BrakedNamespace is a namespace held: its entries leaving, those it had, whether its share tripped.
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
	return fmt.Sprintf("%s would be deleted at once (over the mass-deletion brake); none is marked or deleted, and no new name is written in %s, "+
		"until the cause goes away or the deletion is confirmed with --confirm-mass-deletion=%s or the RouterHostsConfig's spec.deletion.brake.confirm: %q",
		strings.Join(what, " and "), where, b.Token, b.Token)
}

// brake holds, when the entries leaving trip the Brake, the marks, deletions and new names of
// the namespaces held and every renewal of the heartbeat; a duplicate's deletion always goes.
func (r *Registry) brake(in *changesIn, changes []plan.Change) changed {
	b := r.cfg.Brake
	if (b.Share == 0 && b.NamespaceShare == 0) || !slices.ContainsFunc(changes, func(c plan.Change) bool { return c.Action == plan.Mark }) {
		return changed{changes: changes} // only a sync that marks can trip it: no count
	}
	braked := b.verdict(in.st, changes)
	if braked == nil || b.Confirm == braked.Token {
		return changed{changes: changes}
	}
	out := changed{changes: make([]plan.Change, 0, len(changes)), braked: braked}
	for _, c := range changes {
		ns := ""
		switch {
		case c.Action == plan.Mark || retiring(&c):
			ns = namespaceOf(in.st.view(c.Old))
		case c.Action == plan.Create || c.Action == plan.Adopt: // maybe half of a replacement: it waits with the old
			ns = namespaceOf(viewOf(c.New))
		}
		if beatOnly(&c) || ns != "" && slices.ContainsFunc(braked.Namespaces, func(n BrakedNamespace) bool { return n.Name == ns }) {
			out.held = append(out.held, Held{Change: c, Reason: ReasonMassDeletionHeld, Token: braked.Token})
			continue
		}
		out.changes = append(out.changes, c)
	}
	braked.Stopped = len(out.held)
	return out
}

// namespaceOf is the namespace an operator's entry names.
func namespaceOf(v view) string {
	ns, _ := v.value(PrefixNamespace)
	return ns
}

// verdict is the mass deletion the brake holds once changes are applied, nil for none; the cluster's
// share counts and holds only the namespaces not held on their own that lose more than it of theirs.
func (b Brake) verdict(st *State, changes []plan.Change) *Braked {
	base, leaving, marking := map[string]int{}, map[string]map[string]bool{}, map[string]bool{}
	leave := func(ns, id string) {
		if leaving[ns] == nil {
			leaving[ns] = map[string]bool{}
		}
		leaving[ns][id] = true
	}
	for i := range st.Owned {
		rec := &st.Owned[i]
		ns := namespaceOf(st.view(rec))
		base[ns]++
		if st.marked(rec) {
			leave(ns, rec.ID)
		}
	}
	for i := range changes {
		switch c := &changes[i]; c.Action {
		case plan.Mark:
			ns := namespaceOf(st.view(c.Old))
			leave(ns, c.Old.ID)
			marking[ns] = true
		case plan.Unmark, plan.Update:
			delete(leaving[namespaceOf(st.view(c.Old))], c.Old.ID)
		}
	}
	held := map[string]bool{} // the namespaces held: true where their own share tripped
	for ns := range marking {
		if n := len(leaving[ns]); b.NamespaceShare > 0 && n >= b.NamespaceMinimum && float64(n) > b.NamespaceShare*float64(base[ns]) {
			held[ns] = true
		}
	}
	cluster := false
	if b.Share > 0 {
		var counted []string
		rest, marks := 0, false
		for ns, ids := range leaving {
			if !held[ns] && len(ids) > 0 && (float64(len(ids)) > b.Share*float64(base[ns]) || mutation == "cluster-brake-counts-all") {
				counted = append(counted, ns)
				rest += len(ids)
				marks = marks || marking[ns]
			}
		}
		if cluster = marks && rest >= b.Minimum && float64(rest) > b.Share*float64(len(st.Owned)); cluster {
			for _, ns := range counted {
				held[ns] = false
			}
		}
	}
	if len(held) == 0 {
		return nil
	}
	braked := &Braked{Cluster: cluster}
	var ids []string
	for _, ns := range slices.Sorted(maps.Keys(held)) {
		n := BrakedNamespace{Name: ns, Leaving: len(leaving[ns]), Owned: base[ns], Tripped: held[ns]}
		braked.Namespaces = append(braked.Namespaces, n)
		braked.Leaving += n.Leaving
		braked.Owned += n.Owned
		ids = slices.AppendSeq(ids, maps.Keys(leaving[ns]))
	}
	if cluster {
		braked.Owned = len(st.Owned)
	}
	braked.Token = brakeToken(ids)
	return braked
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
