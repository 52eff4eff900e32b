//go:build mutation && mutation_cluster_brake_counts_all

package registry

const mutation = "cluster-brake-counts-all" // the cluster's brake counts every namespace with an entry leaving, and holds them all
