package plan

import "fmt"

// Policy limits which kinds of change reach the router, as external-dns's --policy does. The
// plan knows none: the registry's policy stage holds what the policy forbids, with its reason.
type Policy string

// The policies. PolicySync makes the server match the cluster; UpsertOnly never deletes;
// CreateOnly only adds entries and never touches an existing one.
const (
	PolicySync Policy = "sync"
	UpsertOnly Policy = "upsert-only"
	CreateOnly Policy = "create-only"
)

// ParsePolicy checks a --policy value.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case PolicySync, UpsertOnly, CreateOnly:
		return p, nil
	}
	return "", fmt.Errorf("unknown policy %q (want sync, upsert-only or create-only)", s)
}

// Forbids reports whether p forbids a change of action a: upsert-only every deletion,
// create-only every change but a create (an adoption edits an entry too).
func (p Policy) Forbids(a Action) bool {
	switch p {
	case UpsertOnly:
		return a == Delete
	case CreateOnly:
		return a != Create
	}
	return false
}
