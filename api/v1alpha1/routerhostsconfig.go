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
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
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
