package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Filter picks the entries list prints; a zero field picks every entry.
type Filter struct {
	// Namespace: entries held by that namespace (their objects', or their namespace tag's).
	Namespace string
	// Owner: "this" (this cluster's, adopted ones too), "other" (another cluster's or a
	// namesake's) or "hand-made".
	Owner string
	// State: one of States.
	State string
}

// Owners are the values of Filter.Owner.
func Owners() []string { return []string{"this", "other", "hand-made"} }

// Check reports a filter value list does not know.
func (f Filter) Check() error {
	if f.Owner != "" && !slices.Contains(Owners(), f.Owner) {
		return fmt.Errorf("--owner=%s: want one of %s", f.Owner, strings.Join(Owners(), ", "))
	}
	if f.State != "" && !slices.Contains(States(), f.State) {
		return fmt.Errorf("--state=%s: want one of %s", f.State, strings.Join(States(), ", "))
	}
	return nil
}

// List is every entry on the router, as one read found them and the registry decided, that f
// picks: hostname order, then address.
func List(in *Input, f Filter) []RouterEntry {
	d := index(in)
	out := []RouterEntry{}
	for i := range d.entries {
		e := d.entry(&d.entries[i])
		if f.picks(&e) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b RouterEntry) int {
		if c := strings.Compare(strings.ToLower(a.Hostname), strings.ToLower(b.Hostname)); c != 0 {
			return c
		}
		return strings.Compare(a.Address, b.Address)
	})
	return out
}

func (f Filter) picks(e *RouterEntry) bool {
	switch f.Owner {
	case "this":
		if e.Owner.Class != string(endpoint.OwnerThis) && e.Owner.Class != string(endpoint.OwnerAdopted) && e.Owner.Class != string(endpoint.OwnerCoOwned) {
			return false
		}
	case "other":
		if e.Owner.Class != string(endpoint.OwnerOtherCluster) && e.Owner.Class != string(endpoint.OwnerNamesake) && e.Owner.Class != string(endpoint.OwnerSilentCluster) {
			return false
		}
	case "hand-made":
		if e.Owner.Class != string(endpoint.OwnerHandMade) {
			return false
		}
	}
	if f.State != "" && e.State != f.State {
		return false
	}
	if f.Namespace != "" && e.Owner.Namespace != f.Namespace &&
		!slices.ContainsFunc(e.Owner.Objects, func(o Object) bool { return o.Namespace == f.Namespace }) {
		return false
	}
	return true
}
