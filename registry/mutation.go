//go:build !mutation

package registry

// mutation names the rule `make model MODEL_MUTATION=NAME` (or a build with the tags mutation
// and mutation_<name>) breaks on purpose, to show that the tests catch it. It is a constant,
// empty in every real build, so no flag or setting can break a rule in a running operator.
const mutation = ""
