package webhook

import "github.com/router-hosts-operator/router-hosts-operator/endpoint"

// Ref is the object reference the webhook gives the external-dns record of host published in
// namespace: a UID hashed from the hostname alone, so the same in every webhook. The ownership
// simulation (test/model) plays webhooks with it.
func Ref(namespace, host string) endpoint.SourceRef { return refOf(namespace, host) }
