//go:build mutation && mutation_no_consent

package registry

// The consent check dropped: a cluster claims and serves a name another cluster holds without
// both consenting (bothConsent).
const mutation = "no-consent"
