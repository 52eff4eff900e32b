package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RouterHostsConfigResource is the cluster-scoped RouterHostsConfig resource;
// kustomize/crds/routerhostsconfig.yaml is its schema.
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

// RouterHostsConfig is the operator's configuration for the cluster. It is read as JSON
// (runtime.DefaultUnstructuredConverter), so its fields carry the schema's names.
type RouterHostsConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RouterHostsConfigSpec   `json:"spec,omitempty"`
	Status            RouterHostsConfigStatus `json:"status,omitempty"`
}

// RouterHostsConfigSpec is what the user configures; every field is optional and falls back
// to the matching flag.
type RouterHostsConfigSpec struct {
	ClusterName    string         `json:"clusterName,omitempty"`
	Server         *ServerSpec    `json:"server,omitempty"`
	IPResolution   []IPResolution `json:"ipResolution,omitempty"`
	Deletion       *DeletionSpec  `json:"deletion,omitempty"`
	DefaultTags    []string       `json:"defaultTags,omitempty"`
	Policy         string         `json:"policy,omitempty"`
	DomainFilter   []string       `json:"domainFilter,omitempty"`
	ExcludeDomains []string       `json:"excludeDomains,omitempty"`
	Interval       *int64         `json:"intervalSeconds,omitempty"`
	OptIn          *OptInSpec     `json:"optIn,omitempty"`
	Tenancy        *TenancySpec   `json:"tenancy,omitempty"`
	Budgets        *BudgetsSpec   `json:"budgets,omitempty"`
}

// TenancySpec says which names each namespace may claim and which namespaces may adopt
// hand-made entries; each field left out keeps its flag's value.
type TenancySpec struct {
	// NamespaceDomains, when not empty, are the only names namespaces may claim.
	NamespaceDomains []NamespaceDomains `json:"namespaceDomains,omitempty"`
	// AdoptionNamespaces are the namespaces (or patterns) that may adopt hand-made entries;
	// an empty list lets none.
	AdoptionNamespaces []string `json:"adoptionNamespaces,omitempty"`
	// MaxGracePeriodSeconds caps the grace period an object may ask for; 0 lifts the cap.
	MaxGracePeriodSeconds *int64 `json:"maxGracePeriodSeconds,omitempty"`
}

// NamespaceDomains lets the namespaces Namespace names (a name or a pattern such as team-*)
// claim names under Domains.
type NamespaceDomains struct {
	Namespace string   `json:"namespace"`
	Domains   []string `json:"domains"`
}

// BudgetsSpec bounds what objects, namespaces and syncs may ask of the router; each field left
// out keeps its flag's value, and 0 means no limit.
type BudgetsSpec struct {
	EntriesPerObject    *int32 `json:"entriesPerObject,omitempty"`
	AliasesPerObject    *int32 `json:"aliasesPerObject,omitempty"`
	TagsPerObject       *int32 `json:"tagsPerObject,omitempty"`
	EntriesPerNamespace *int32 `json:"entriesPerNamespace,omitempty"`
	WritesPerSync       *int32 `json:"writesPerSync,omitempty"`
}

// OptInSpec is how objects are managed besides their opt-in annotation; each field left out
// keeps its flag's value.
type OptInSpec struct {
	IngressClasses         []string `json:"ingressClasses,omitempty"`
	GatewayNames           []string `json:"gatewayNames,omitempty"`
	ExternalDNSAnnotations *bool    `json:"externalDNSAnnotations,omitempty"`
}

// ServerSpec is the router-hosts server and the Secret with the client's mTLS material.
type ServerSpec struct {
	Endpoint     string           `json:"endpoint"`
	ServerName   string           `json:"serverName,omitempty"`
	TLSSecretRef *SecretReference `json:"tlsSecretRef,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// IPResolution is one step of the resolution chain.
type IPResolution struct {
	Type             string `json:"type"`
	ServiceName      string `json:"serviceName,omitempty"`
	ServiceNamespace string `json:"serviceNamespace,omitempty"`
	Address          string `json:"address,omitempty"`
}

// DeletionSpec is the deletion behaviour.
type DeletionSpec struct {
	GracePeriodSeconds *int64     `json:"gracePeriodSeconds,omitempty"`
	Brake              *BrakeSpec `json:"brake,omitempty"`
}

// BrakeSpec is the mass-deletion brake: beyond Percent of the cluster's entries (and at least
// Minimum) on their way out at once, nothing is marked or deleted until Confirm holds the
// held deletion's token.
type BrakeSpec struct {
	Percent *int32 `json:"percent,omitempty"`
	Minimum *int32 `json:"minimum,omitempty"`
	Confirm string `json:"confirm,omitempty"`
}

// RouterHostsConfigStatus is what the operator reports.
type RouterHostsConfigStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Endpoint           string             `json:"endpoint,omitempty"`
	Entries            int                `json:"entries"`
	PendingDeletions   int                `json:"pendingDeletions"`
	LastSyncTime       *metav1.Time       `json:"lastSyncTime,omitempty"`
	ServerVersion      string             `json:"serverVersion,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}
