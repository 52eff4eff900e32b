//go:build mutation && mutation_twin_away_forgotten

package registry

const mutation = "twin-away-forgotten" // a mark on an entry a twin wrote waits only its whole reads (witness.Waits)
