//go:build mutation && mutation_hashed_uids_as_evidence

package registry

const mutation = "hashed-uids-as-evidence"
