package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// carriers are the names entries carry as aliases, by lowercase name, for the rule every name
// obeys, hostname or alias (docs/ownership.md, "Every name obeys one rule").
type carriers struct {
	owned   map[string][]*endpoint.Record // the owned entries that carry each
	foreign map[string]*endpoint.Record   // another cluster's entry that does, the lowest ID
	hand    map[string]string             // a hand-made entry's hostname that does
	noAdopt map[string]bool               // the hand-made hostnames never to adopt (TagNoAdopt)
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

// aliasHolder is the first namespace whose entry carries an alias it still asks for or is
// marked for deletion (the alias goes with it), "" when none does.
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

// sendOn is what a stage leaves of eps, in order, by keep's verdict on each (the endpoint, a
// changed copy, or nil to drop it): eps itself while keep changes nothing.
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
