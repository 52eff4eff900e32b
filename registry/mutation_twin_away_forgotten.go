//go:build mutation && mutation_twin_away_forgotten

package registry

// A twin at work forgotten: a mark on an entry another writer of this identity wrote while
// this process ran waits only its whole reads, so a twin away for a while loses its names
// (witness.Waits).
const mutation = "twin-away-forgotten"
