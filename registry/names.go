package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Every name an entry carries, its hostname or an alias, obeys one rule:
//
//   - a name another cluster's entry carries is that cluster's, unless an entry of this cluster
//     carries it already;
//   - a name a hand-made entry carries as an alias is the user's, and nobody claims it; one it
//     carries as its hostname may only be adopted, by a namespace the tenancy rules let adopt,
//     and never when the entry is tagged no-adopt;
//   - within the cluster one namespace holds a name: the one whose entry carries it (as its
//     hostname first, then as an alias it still asks for, or on an entry on its way out, until
//     it is gone, as a hostname is held through its grace period); a name nobody holds goes to
//     a hostname claim before an alias, and among claims of one kind to the oldest.
//
// The merge applies the rule to hostnames among hostname claims. hostnames (before the merge)
// turns down hostname claims that an alias or a hand-made entry decides; aliases (after it)
// decides every alias of the merged endpoints, which then know which namespace won each
// hostname.

// carriers are the names entries carry as aliases, by lowercase name: the owned entries that
// carry each, another cluster's entry that does, the hostname of a hand-made entry. It also
// notes the hostnames of hand-made entries that must never be adopted.
type carriers struct {
	owned   map[string][]*endpoint.Record
	foreign map[string]*endpoint.Record // the one with the lowest ID
	hand    map[string]string
	noAdopt map[string]bool
}

func carriersOf(st *State) carriers {
	var c carriers
	for i := range st.Owned {
		rec := &st.Owned[i]
		for _, a := range rec.Aliases {
			if c.owned == nil {
				c.owned = map[string][]*endpoint.Record{}
			}
			k := strings.ToLower(a)
			c.owned[k] = append(c.owned[k], rec)
		}
	}
	for _, recs := range st.Foreign {
		for i := range recs {
			for _, a := range recs[i].Aliases {
				if c.foreign == nil {
					c.foreign = map[string]*endpoint.Record{}
				}
				if k := strings.ToLower(a); c.foreign[k] == nil || recs[i].ID < c.foreign[k].ID {
					c.foreign[k] = &recs[i]
				}
			}
		}
	}
	for host, recs := range st.Unowned {
		for i := range recs {
			for _, a := range recs[i].Aliases {
				if c.hand == nil {
					c.hand = map[string]string{}
				}
				c.hand[strings.ToLower(a)] = recs[i].Hostname
			}
			if recs[i].HasTag(TagNoAdopt) {
				if c.noAdopt == nil {
					c.noAdopt = map[string]bool{}
				}
				c.noAdopt[host] = true
			}
		}
	}
	return c
}

// aliasHolder is the namespace whose entry carries an alias and still asks for it, or whose
// entry carrying it is marked for deletion (the alias goes with the entry, after its grace
// period); the first in order when there are several, "" when none does.
func aliasHolder(carrying []*endpoint.Record, asking []string, st *State) string {
	best := ""
	for _, rec := range carrying {
		v := st.view(rec)
		ns, ok := v.value(PrefixNamespace)
		_, leaving := v.value(PrefixPending)
		if ok && (leaving || slices.Contains(asking, ns)) && (best == "" || ns < best) {
			best = ns
		}
	}
	return best
}

// without is names less drop, nil when nothing is left.
func without(names, drop []string) []string {
	out := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(drop, n) })
	if len(out) == 0 {
		return nil
	}
	return out
}
