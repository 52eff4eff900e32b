//go:build mutation && mutation_cluster_freeze

package registry

const mutation = "cluster-freeze" // one contested entry holds every mark and deletion of the cluster
