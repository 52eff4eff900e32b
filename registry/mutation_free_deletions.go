//go:build mutation && mutation_free_deletions

package registry

const mutation = "free-deletions" // marks and deletions are not charged to the write rate
