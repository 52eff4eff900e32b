//go:build mutation && mutation_silent_by_reader

package registry

// Another installation's heartbeat is read against this installation's threshold, not the
// renewal period the mark carries: a live installation renewing on a longer period is reported
// silent.
const mutation = "silent-by-reader"
