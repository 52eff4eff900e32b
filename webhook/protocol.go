// Package webhook serves router-hosts as an external-dns webhook provider (external-dns
// v0.22's protocol). What external-dns asks for becomes desired endpoints, and the operator's
// own controller, registry and provider write them, so external-dns gets the operator's
// guarantees: adoption, grace periods, cluster ownership, minimal updates. The webhook keeps
// no state of its own: what it owns is read from the server.
package webhook

// MediaType is the webhook protocol's media type; external-dns compares it byte for byte.
const MediaType = mediaTypeName + ";version=" + mediaTypeVersion

// The media type's parts, as a request's Content-Type is parsed.
const (
	mediaTypeName    = "application/external.dns.webhook+json"
	mediaTypeVersion = "1"
)

// The record types an entry can be.
const (
	RecordTypeA    = "A"
	RecordTypeAAAA = "AAAA"
)

// WireEndpoint is external-dns's endpoint as it travels over the wire.
type WireEndpoint struct {
	DNSName          string            `json:"dnsName,omitempty"`
	Targets          []string          `json:"targets,omitempty"`
	RecordType       string            `json:"recordType,omitempty"`
	SetIdentifier    string            `json:"setIdentifier,omitempty"`
	RecordTTL        int64             `json:"recordTTL,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	ProviderSpecific []Property        `json:"providerSpecific,omitempty"`
}

// Property is one provider-specific property of an endpoint.
type Property struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// Changes is what external-dns asks to be written; UpdateOld[i] becomes UpdateNew[i].
type Changes struct {
	Create    []*WireEndpoint `json:"create,omitempty"`
	UpdateOld []*WireEndpoint `json:"updateOld,omitempty"`
	UpdateNew []*WireEndpoint `json:"updateNew,omitempty"`
	Delete    []*WireEndpoint `json:"delete,omitempty"`
}

// domainFilter is the negotiation's answer, in the shape external-dns's DomainFilter reads
// (include and exclude lists; its OpenAPI file's "filters" would read as match-all).
type domainFilter struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}
