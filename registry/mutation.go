//go:build !mutation

package registry

// mutation names the rule that `make model MODEL_MUTATION=NAME` breaks on purpose, to show that
// the simulation catches it (test/model). Every real build leaves it empty: it is a constant,
// so the checks on it compile away, and no flag or setting can break a rule in a running
// operator. A build with the tags mutation and mutation_<name> takes it from that name's file.
const mutation = ""
