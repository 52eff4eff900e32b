package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Every name an entry carries, hostname or alias, obeys one rule:
//
//   - a name another cluster's entry carries is that cluster's, unless an entry of this cluster
//     carries it already;
//   - a name a hand-made entry carries as an alias is the user's; its hostname may only be
//     adopted, by a namespace the tenancy rules let adopt, and never when tagged no-adopt;
//   - within the cluster one namespace holds a name: the one whose entry carries it (as its
//     hostname first, then as an alias it still asks for or on an entry on its way out); a name
//     nobody holds goes to a hostname claim before an alias, then to the oldest claim.

// carriers are the names entries carry as aliases, by lowercase name: the owned entries that
// carry each, another cluster's entry that does, a hand-made entry's hostname; and the
// hand-made entries' hostnames that must never be adopted.
type carriers struct {
	owned   map[string][]*endpoint.Record
	foreign map[string]*endpoint.Record // the one with the lowest ID
	hand    map[string]string
	noAdopt map[string]bool
}

func carriersOf(st *State) carriers {
	var c carriers
	for i := range st.Owned {
		for _, a := range st.Owned[i].Aliases {
			k := strings.ToLower(a)
			lazy(&c.owned)[k] = append(c.owned[k], &st.Owned[i])
		}
	}
	for _, recs := range st.Foreign {
		for i := range recs {
			for _, a := range recs[i].Aliases {
				if k := strings.ToLower(a); c.foreign[k] == nil || recs[i].ID < c.foreign[k].ID {
					lazy(&c.foreign)[k] = &recs[i]
				}
			}
		}
	}
	for host, recs := range st.Unowned {
		for i := range recs {
			for _, a := range recs[i].Aliases {
				lazy(&c.hand)[strings.ToLower(a)] = recs[i].Hostname
			}
			if recs[i].HasTag(TagNoAdopt) {
				lazy(&c.noAdopt)[host] = true
			}
		}
	}
	return c
}

// aliasHolder is the first namespace in order whose entry carries an alias and still asks for
// it or is marked for deletion (the alias goes with it), "" when none does.
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

// firstNamespace is the namespace named on the first of entries in order that names one.
func firstNamespace(entries []*endpoint.Record, st *State) string {
	best := ""
	for _, rec := range entries {
		v := st.view(rec)
		if ns, ok := v.value(PrefixNamespace); ok && (best == "" || ns < best) {
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

// lazy is *m, made on first use: most syncs have nothing to put in the maps a stage keeps.
func lazy[K comparable, V any](m *map[K]V) map[K]V {
	if *m == nil {
		*m = map[K]V{}
	}
	return *m
}

// sendOn is what a stage leaves of eps, by keep's verdict on each: the endpoint, a changed copy,
// or nil to drop it. It keeps their order, and is eps itself while keep changes nothing.
func sendOn(eps []*endpoint.Endpoint, keep func(*endpoint.Endpoint) *endpoint.Endpoint) []*endpoint.Endpoint {
	out, copied := eps, false
	for i, ep := range eps {
		k := keep(ep)
		if !copied && k != ep {
			out, copied = append(make([]*endpoint.Endpoint, 0, len(eps)), eps[:i]...), true
		}
		if copied && k != nil {
			out = append(out, k)
		}
	}
	return out
}
