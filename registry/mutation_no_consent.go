//go:build mutation && mutation_no_consent

package registry

const mutation = "no-consent" // a cluster takes a name another holds without both consenting (bothConsent)
