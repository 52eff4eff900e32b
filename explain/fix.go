package explain

import "github.com/router-hosts-operator/router-hosts-operator/registry"

// HeldFix is what a person can do about a held change, as explain words it, for the plan
// command, which words its holds the same way.
func HeldFix(h *registry.Held) string { return heldFix(h) }
