//go:build mutation && mutation_cluster_freeze

package registry

// mutation: one contested entry holds every mark and deletion of the cluster, as a twin's
// dispute once did, so that whoever can rewrite one entry twice freezes every deletion.
const mutation = "cluster-freeze"
