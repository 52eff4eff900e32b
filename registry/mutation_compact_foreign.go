//go:build mutation && mutation_compact_foreign

package registry

const mutation = "compact-foreign" // every entry past the threshold is compacted, whoever's
