//go:build mutation && mutation_silent_by_reader

package registry

const mutation = "silent-by-reader" // another installation's heartbeat is read against this one's threshold, not its own period
