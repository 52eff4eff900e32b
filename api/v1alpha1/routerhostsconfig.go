package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RouterHostsConfigResource is the cluster-scoped RouterHostsConfig resource.
var RouterHostsConfigResource = GroupVersion.WithResource("routerhostsconfigs")

// RouterHostsConfigKind is the RouterHostsConfig's kind.
const RouterHostsConfigKind = "RouterHostsConfig"

// The RouterHostsConfig's condition types.
const (
	// ConditionReady is True when the config is applied, the server answers and the last sync
	// succeeded.
	ConditionReady = "Ready"
	// ConditionServerReachable says whether the server answers, with a Reason* below.
	ConditionServerReachable = "ServerReachable"
)

// The reasons of the ServerReachable condition.
const (
	ReasonConnected            = "Connected"
	ReasonAuthenticationFailed = "AuthenticationFailed"
	ReasonUnreachable          = "Unreachable"
	ReasonInvalidConfig        = "InvalidConfig"
	// ReasonNoRouter: nothing names a router yet; the operator waits for one.
	ReasonNoRouter = "NoRouter"
)

// The types of an ipResolution step.
const (
	StepIngressController = "IngressController"
	StepService           = "Service"
	StepStatic            = "Static"
	StepIngressStatus     = "IngressStatus"
	StepGatewayStatus     = "GatewayStatus"
)

// RouterHostsConfig is the cluster's operator configuration, one object (named by
// --config-name, default "default"). A field it sets wins over the matching flag; a field it
// leaves out falls back to the flag. The operator applies a change from its next sync, without
// a restart.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=rhc
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Entries",type=integer,JSONPath=`.status.entries`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingDeletions`
// +kubebuilder:printcolumn:name="Last Sync",type=date,JSONPath=`.status.lastSyncTime`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.status.serverVersion`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RouterHostsConfig struct {
	// The operator reads the object as JSON (runtime.DefaultUnstructuredConverter), so its
	// fields carry the schema's names.

	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec RouterHostsConfigSpec `json:"spec,omitempty"`
	// +optional
	Status RouterHostsConfigStatus `json:"status,omitempty"`
}

// RouterHostsConfigSpec is what the user configures; every field is optional and falls back
// to the matching flag.
type RouterHostsConfigSpec struct {
	// Name written in the cluster:<name> tag (--cluster-name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
	// The router-hosts server (--router-hosts-endpoint, --tls-*).
	// +optional
	Server *ServerSpec `json:"server,omitempty"`
	// Ordered IP resolution chain (--ip-resolution); the first step that yields an address wins.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +optional
	IPResolution []IPResolution `json:"ipResolution,omitempty"`
	// The deletion behaviour: grace period and mass-deletion brake.
	// +optional
	Deletion *DeletionSpec `json:"deletion,omitempty"`
	// Tags added to every entry (--default-tag). k8s-operator is implied; cluster:<name>
	// names the cluster and must agree with clusterName; other reserved tags are refused.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +optional
	DefaultTags []string `json:"defaultTags,omitempty"`
	// sync (create, update, delete), upsert-only (never delete) or create-only (--policy).
	// +kubebuilder:validation:Enum=sync;upsert-only;create-only
	// +optional
	Policy string `json:"policy,omitempty"`
	// Only manage hostnames equal to or under these domains (--domain-filter).
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	DomainFilter []string `json:"domainFilter,omitempty"`
	// Never manage hostnames equal to or under these domains (--exclude-domains).
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	ExcludeDomains []string `json:"excludeDomains,omitempty"`
	// Period of full resyncs (--interval).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	Interval *int64 `json:"intervalSeconds,omitempty"`
	// How objects are managed besides their opt-in annotation; a field left out keeps its
	// flag's value. The annotation set to "false" opts an object out of all of it.
	// +optional
	OptIn *OptInSpec `json:"optIn,omitempty"`
	// Which names each namespace may claim and which namespaces may adopt hand-made entries,
	// for a cluster shared by several teams; a field left out keeps its flag's value.
	// +optional
	Tenancy *TenancySpec `json:"tenancy,omitempty"`
	// What one object, one namespace and one sync may ask of the router; a field left out
	// keeps its flag's value, and 0 means no limit.
	// +optional
	Budgets *BudgetsSpec `json:"budgets,omitempty"`
	// How this installation watches the other clusters on the router; a field left out keeps
	// its flag's value.
	// +optional
	Ownership *OwnershipSpec `json:"ownership,omitempty"`
}

// OwnershipSpec is how this installation watches the other clusters on the router.
type OwnershipSpec struct {
	// This installation's silence threshold (--silent-cluster-after), a Go duration such as
	// 168h: it renews its heartbeat every quarter of it, and the others report it silent once
	// its newest heartbeat is older than this. "0s" writes no heartbeat and reports none.
	// +optional
	SilentClusterAfter *metav1.Duration `json:"silentClusterAfter,omitempty"`
}

// TenancySpec says which names each namespace may claim and which namespaces may adopt
// hand-made entries; each field left out keeps its flag's value.
type TenancySpec struct {
	// When not empty, the only names namespaces may claim (hostnames and aliases alike): a
	// namespace may claim a name when an item whose namespace matches it lists a domain the
	// name equals or is under (--namespace-domains).
	// +kubebuilder:validation:MaxItems=256
	// +optional
	NamespaceDomains []NamespaceDomains `json:"namespaceDomains,omitempty"`
	// The namespaces (names or patterns) that may adopt hand-made entries; an empty list lets
	// none, and a hand-made entry tagged no-adopt is never adopted (--adopt-namespace).
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	AdoptionNamespaces []string `json:"adoptionNamespaces,omitempty"`
	// The longest grace period an object may ask for or an entry may carry; 0 lifts the cap
	// (--max-grace-period).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	MaxGracePeriodSeconds *int64 `json:"maxGracePeriodSeconds,omitempty"`
}

// NamespaceDomains lets the namespaces Namespace names claim names under Domains.
type NamespaceDomains struct {
	// A namespace's name, or a pattern such as team-* or *.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// The domains whose names, and the names under them, the namespaces may claim.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	Domains []string `json:"domains"`
}

// BudgetsSpec bounds what objects, namespaces and syncs may ask of the router; each field left
// out keeps its flag's value, and 0 means no limit.
type BudgetsSpec struct {
	// An object's hostnames times their addresses, and its entries marked for deletion until
	// they are gone (--max-entries-per-object).
	// +kubebuilder:validation:Minimum=0
	// +optional
	EntriesPerObject *int32 `json:"entriesPerObject,omitempty"`
	// The aliases an object asks for (--max-aliases-per-object).
	// +kubebuilder:validation:Minimum=0
	// +optional
	AliasesPerObject *int32 `json:"aliasesPerObject,omitempty"`
	// The tags an object asks for (--max-tags-per-object).
	// +kubebuilder:validation:Minimum=0
	// +optional
	TagsPerObject *int32 `json:"tagsPerObject,omitempty"`
	// The entries of one namespace, marked ones included until they are gone; what would add
	// entries waits beyond it (--max-entries-per-namespace).
	// +kubebuilder:validation:Minimum=0
	// +optional
	EntriesPerNamespace *int32 `json:"entriesPerNamespace,omitempty"`
	// The writes of one sync; the rest follow in the next, at once (--max-writes-per-sync).
	// +kubebuilder:validation:Minimum=0
	// +optional
	WritesPerSync *int32 `json:"writesPerSync,omitempty"`
	// How fast one object writes beyond writing all it asks for at once; faster, its latest
	// state is written at this rate (--max-object-writes-per-minute).
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObjectWritesPerMinute *int32 `json:"objectWritesPerMinute,omitempty"`
	// How fast one namespace writes beyond writing all it asks for at once
	// (--max-namespace-writes-per-minute).
	// +kubebuilder:validation:Minimum=0
	// +optional
	NamespaceWritesPerMinute *int32 `json:"namespaceWritesPerMinute,omitempty"`
}

// OptInSpec is how objects are managed besides their opt-in annotation; each field left out
// keeps its flag's value.
type OptInSpec struct {
	// Manage every Ingress of these classes without its annotation (--ingress-class).
	// +kubebuilder:validation:items:MinLength=1
	// +optional
	IngressClasses []string `json:"ingressClasses,omitempty"`
	// Manage every route attached to these Gateways, namespace/name, without annotations
	// (--gateway-name).
	// +kubebuilder:validation:items:Pattern=`^[^/]+/[^/]+$`
	// +optional
	GatewayNames []string `json:"gatewayNames,omitempty"`
	// Also read external-dns's hostname and target annotations (--external-dns-annotations).
	// +optional
	ExternalDNSAnnotations *bool `json:"externalDNSAnnotations,omitempty"`
}

// ServerSpec is the router-hosts server and the Secret with the client's mTLS material.
type ServerSpec struct {
	// The server's gRPC address, host:port.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:Pattern=`^[^\s:]+:[0-9]{1,5}$|^\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}$`
	Endpoint string `json:"endpoint"`
	// Name to verify in the server's certificate, when it differs from the endpoint's host.
	// +optional
	ServerName string `json:"serverName,omitempty"`
	// Secret holding ca.crt, tls.crt and tls.key (as cert-manager writes them); watched, so a
	// rotation needs no restart.
	// +optional
	TLSSecretRef *SecretReference `json:"tlsSecretRef,omitempty"`
	// The router's DNS server, host:port, which the operator asks for every name it writes to
	// check that it answers as written (--verify-dns); left out, the flag's.
	// +kubebuilder:validation:Pattern=`^[^\s:]+:[0-9]{1,5}$|^\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}$`
	// +optional
	VerifyDNS string `json:"verifyDNS,omitempty"`
	// Fold the router's event log of each entry this installation alone owns once it passes 100
	// events, and of each it deleted (--compact-own-entries); left out, the flag's.
	// +optional
	CompactOwnEntries *bool `json:"compactOwnEntries,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
}

// IPResolution is one step of the resolution chain.
//
// +kubebuilder:validation:XValidation:rule="!(self.type in ['IngressController', 'Service']) || (has(self.serviceName) && has(self.serviceNamespace))",message="IngressController and Service steps need serviceName and serviceNamespace"
// +kubebuilder:validation:XValidation:rule="self.type in ['IngressController', 'Service'] || (!has(self.serviceName) && !has(self.serviceNamespace))",message="only IngressController and Service steps take serviceName and serviceNamespace"
// +kubebuilder:validation:XValidation:rule="(self.type == 'Static') == has(self.address)",message="a Static step needs address, and only a Static step takes one"
type IPResolution struct {
	// IngressController or Service: the load-balancer IPs of the named Service; Static: a
	// fixed address; IngressStatus: the Ingress's own status; GatewayStatus: the addresses of
	// a route's Gateways.
	// +kubebuilder:validation:Enum=IngressController;Service;Static;IngressStatus;GatewayStatus
	Type string `json:"type"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ServiceNamespace string `json:"serviceNamespace,omitempty"`
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="must be an IPv4 or IPv6 address"
	// +optional
	Address string `json:"address,omitempty"`
}

// DeletionSpec is the deletion behaviour.
type DeletionSpec struct {
	// How long an entry no longer wanted stays before it is deleted or released (--grace-period).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	// The mass-deletion brake: when more than percent of the cluster's entries, and at least
	// minimum, would be on their way out at once, or more than namespacePercent of one
	// namespace's and at least namespaceMinimum, nothing of it is marked or deleted, and no new
	// name of it written, until confirm holds the token the MassDeletionHeld warning names, or
	// the cause goes away.
	// +optional
	Brake *BrakeSpec `json:"brake,omitempty"`
}

// BrakeSpec is the mass-deletion brake: beyond Percent of the cluster's entries (and at least
// Minimum), or NamespacePercent of one namespace's (and at least NamespaceMinimum), on their way
// out at once, nothing of them is marked or deleted until Confirm holds the held deletion's
// token.
type BrakeSpec struct {
	// The share of the cluster's entries, in percent, beyond which the brake holds; 0 turns it
	// off (--mass-deletion-percent).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`
	// The fewest entries on their way out that can trip the brake (--mass-deletion-minimum).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Minimum *int32 `json:"minimum,omitempty"`
	// The share of one namespace's entries, in percent, beyond which the brake holds that
	// namespace; 0 turns the namespaces' brake off (--mass-deletion-namespace-percent).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	NamespacePercent *int32 `json:"namespacePercent,omitempty"`
	// The fewest entries of one namespace on their way out that can trip its brake
	// (--mass-deletion-namespace-minimum).
	// +kubebuilder:validation:Minimum=0
	// +optional
	NamespaceMinimum *int32 `json:"namespaceMinimum,omitempty"`
	// The token of a held mass deletion to let through (--confirm-mass-deletion).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Confirm string `json:"confirm,omitempty"`
}

// RouterHostsConfigStatus is what the operator reports.
type RouterHostsConfigStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// The server the operator talks to, from the spec or its flags.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Entries this cluster owns on the server.
	// +optional
	Entries int `json:"entries"`
	// Owned entries marked for deletion, waiting out their grace period.
	// +optional
	PendingDeletions int `json:"pendingDeletions"`
	// When the last sync that reached the server ended.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
	// The router-hosts server's version.
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`
	// Ready, ServerReachable and Synced.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
