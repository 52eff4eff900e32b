//go:build mutation && mutation_cluster_brake_counts_all

package registry

// The cluster's brake counts, and holds, every namespace with an entry leaving: one namespace's
// everyday deletion spends another's minimum and is held with it.
const mutation = "cluster-brake-counts-all"
