// Package plantest holds what tests of a plan's consumers share, as net/http/httptest does for
// net/http: results of changes, made without a provider.
package plantest

import "github.com/router-hosts-operator/router-hosts-operator/plan"

// Written is the results of changes that all went through, each stored as planned: what a
// provider that stores exactly what it is sent returns.
func Written(changes ...plan.Change) []plan.Result {
	out := make([]plan.Result, len(changes))
	for i := range changes {
		if changes[i].New != nil {
			stored := *changes[i].New
			out[i].Stored = &stored
		}
	}
	return out
}
