//go:build mutation && mutation_free_deletions

package registry

// Marks and deletions are not charged to the write rate: a flap with a grace period of 0 is free.
const mutation = "free-deletions"
