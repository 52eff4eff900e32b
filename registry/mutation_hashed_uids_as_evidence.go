//go:build mutation && mutation_hashed_uids_as_evidence

package registry

const mutation = "hashed-uids-as-evidence" // a webhook's UIDs, hashed from the hostname, prove an entry names an object here
