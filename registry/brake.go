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
// flags, a label filter's typo. When more than Share of the cluster's entries, and at least
// Minimum, would be on their way out, no entry is marked for deletion, and none marked before
// is deleted, until the user confirms that very set (Confirm holds its token) or the cause goes
// away. The brake trips only on a sync that would mark: a burst that reaches the loop in two
// syncs is held whole (the first marks of it are not deleted meanwhile), and a confirmed set,
// once marked, goes as its grace periods end without asking again.
type Brake struct {
	// Share is the part of the cluster's entries, in (0, 1], beyond which the brake holds;
	// zero turns the brake off.
	Share float64
	// Minimum is the fewest entries on their way out that can trip it, so that a cluster with
	// a handful of entries never does.
	Minimum int
	// Confirm is the token of a held deletion the user lets through (Braked.Token).
	Confirm string
}

// DefaultBrake holds a sync that would take more than half of the cluster's entries, and at
// least ten: far from everyday churn, which retires a few entries at a time.
func DefaultBrake() Brake { return Brake{Share: 0.5, Minimum: 10} }

func checkBrake(b Brake) error {
	if b.Share < 0 || b.Share > 1 {
		return fmt.Errorf("mass-deletion share %v: want between 0 (off) and 1", b.Share)
	}
	if b.Minimum < 0 {
		return fmt.Errorf("mass-deletion minimum %d is negative", b.Minimum)
	}
	return nil
}

// Braked is a deletion the brake holds.
type Braked struct {
	// Leaving is the number of the cluster's entries on their way out (marked, or to be),
	// Owned the number the cluster has; Stopped the marks and deletions this sync did not send.
	Leaving, Owned, Stopped int
	// Token names this set of entries; confirming it lets exactly this set go.
	Token string
}

// Message is what the user is told, with the way to let it through.
func (b *Braked) Message() string {
	return fmt.Sprintf("%d of this cluster's %d entries would be deleted at once (over the mass-deletion brake); "+
		"none is marked or deleted until the cause goes away or the deletion is confirmed with "+
		"--confirm-mass-deletion=%s or the RouterHostsConfig's spec.deletion.brake.confirm: %q", b.Leaving, b.Owned, b.Token, b.Token)
}

// brake applies the Brake to a sync's changes: it returns them without the marks and the
// deletions of marked entries when the entries leaving would trip it, and what it held.
// Duplicates, whose address stays served, are no deletion of a name and always go.
func (r *Registry) brake(st *State, changes []plan.Change) ([]plan.Change, *Braked) {
	b := r.cfg.Brake
	// Only a sync that marks can trip it; the others (most) need not count the entries.
	if b.Share == 0 || !slices.ContainsFunc(changes, func(c plan.Change) bool { return c.Action == plan.Mark }) {
		return changes, nil
	}
	leaving := map[string]bool{}
	for i := range st.Owned {
		v := st.view(&st.Owned[i])
		if _, marked := v.value(PrefixPending); marked {
			leaving[st.Owned[i].ID] = true
		}
	}
	marks := 0
	for i := range changes {
		switch c := &changes[i]; {
		case c.Action == plan.Mark:
			leaving[c.Old.ID] = true
			marks++
		case c.Action == plan.Unmark || c.Action == plan.Update:
			delete(leaving, c.Old.ID)
		}
	}
	n := len(leaving)
	if marks == 0 || n < b.Minimum || float64(n) <= b.Share*float64(len(st.Owned)) {
		return changes, nil
	}
	ids := make([]string, 0, n)
	for id := range leaving {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	sum := sha256.New()
	for _, id := range ids {
		sum.Write([]byte(id + "\n"))
	}
	token := strconv.Itoa(n) + "-" + hex.EncodeToString(sum.Sum(nil))[:8]
	if b.Confirm == token {
		return changes, nil
	}
	kept := make([]plan.Change, 0, len(changes))
	for _, c := range changes {
		if c.Action != plan.Mark && !retiring(&c) {
			kept = append(kept, c)
		}
	}
	return kept, &Braked{Leaving: n, Owned: len(st.Owned), Stopped: len(changes) - len(kept), Token: token}
}

// retiring reports whether c deletes or releases an entry at the end of its grace period.
func retiring(c *plan.Change) bool {
	return (c.Action == plan.Delete && !c.Duplicate) || c.Action == plan.Release
}

// takeUpPerSync is how many entries of an earlier version a sync gives the identity when
// nothing else about them changes: the take-up trickles in after an upgrade instead of
// rewriting every entry in one sync.
const takeUpPerSync = 50

// takeUpOnly reports whether c only gives an entry this installation's cluster: tag: an
// earlier version's (no identity, or the identity in a cluster-id: tag of its own), as it is
// but for its cluster tags.
func (r *Registry) takeUpOnly(st *State, c *plan.Change) bool {
	if c.Action != plan.Update || c.Fields() != endpoint.Fields(endpoint.FieldTags) || !slices.Contains(c.New.Tags, r.clusterTag) {
		return false
	}
	if cl := st.parser.Parse(c.Old).class; cl != legacy && cl != own {
		return false
	}
	clusterTags := func(t string) bool {
		return strings.HasPrefix(t, PrefixCluster) || strings.HasPrefix(t, PrefixClusterID)
	}
	oldRest := slices.DeleteFunc(slices.Clone(c.Old.Tags), clusterTags)
	newRest := slices.DeleteFunc(slices.Clone(c.New.Tags), clusterTags)
	return len(oldRest) == len(newRest) && endpoint.SameUnion(oldRest, newRest)
}
