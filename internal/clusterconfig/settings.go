// Package clusterconfig is the RouterHostsConfig resource: it lays the object named by
// --config-name over the flags, follows the object and its mTLS Secret, hands every valid change
// to the operator while it runs, and reports the operator's state in the object's status.
package clusterconfig

import (
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// Settings are the operator's settings a RouterHostsConfig may set, each in one typed home:
// the flags fill them (with the defaults of the packages that own each rule), a
// RouterHostsConfig's fields are laid over them (Overlay), and the registry's part is handed to
// the registry as it is.
type Settings struct {
	// Config is the registry's part: the cluster's name and identity, the default tags, the
	// grace period, the policy, the domain filter, the tenancy, the budgets and the brake.
	registry.Config
	IPResolution []source.Strategy
	OptIn        source.OptIn
	Endpoint     string
	ServerName   string
	// VerifyDNS is the router's DNS server, host:port, asked for the names written
	// (dnscheck); "" leaves the check off.
	VerifyDNS string
	// TLSFiles says the flags name the mTLS files, the fallback when no Secret is named.
	TLSFiles bool
	// NoServer: entries go to the in-process store (--provider=inmemory), so the server's
	// settings are not needed and not used.
	NoServer bool
	// Secret is the "namespace/name" of the Secret Keys were read from; empty when the files
	// are used.
	Secret string
	Keys   *routerhosts.PEM
}

// Domains is the compiled domain filter.
func (s *Settings) Domains() (endpoint.DomainFilter, error) {
	return endpoint.NewDomainFilter(s.DomainFilter, s.ExcludeDomains)
}

// Registry is the registry's part of the settings.
func (s *Settings) Registry() registry.Config { return s.Config }

// Target is the provider's part of the settings.
func (s *Settings) Target() routerhosts.Target {
	return routerhosts.Target{Endpoint: s.Endpoint, ServerName: s.ServerName, Keys: s.Keys}
}

// Equal reports whether a and b configure the operator the same way.
func (s Settings) Equal(o Settings) bool {
	if !s.Keys.Equal(o.Keys) {
		return false
	}
	s.Keys, o.Keys = nil, nil
	return reflect.DeepEqual(s, o)
}

// Check reports what would keep the settings from being applied.
func (s *Settings) Check() error {
	if _, err := s.Domains(); err != nil {
		return fmt.Errorf("domain filter: %w", err)
	}
	if _, err := registry.New(s.Registry()); err != nil {
		return err
	}
	switch {
	case s.NoServer:
	case s.Endpoint == "":
		return &NoRouterError{What: "no router-hosts endpoint: set spec.server.endpoint or --router-hosts-endpoint"}
	case s.Keys == nil && !s.TLSFiles:
		return &NoRouterError{What: "no mTLS material: set spec.server.tlsSecretRef or --tls-ca, --tls-cert and --tls-key"}
	}
	switch {
	case s.Interval <= 0:
		return fmt.Errorf("the interval must be positive")
	case len(s.IPResolution) == 0:
		return fmt.Errorf("the IP resolution chain is empty")
	}
	return nil
}

// NoRouterError says that nothing names a router yet: settings otherwise good, but no
// endpoint or no mTLS material for it. The operator waits for a RouterHostsConfig to name one
// instead of exiting, since GitOps tools often apply the operator before its config.
type NoRouterError struct{ What string }

func (e *NoRouterError) Error() string { return e.What }

// IsNoRouter reports whether err is (or wraps) a NoRouterError.
func IsNoRouter(err error) bool {
	var nr *NoRouterError
	return errors.As(err, &nr)
}

// SecretKeys are the keys read from the mTLS Secret, as cert-manager writes them.
var SecretKeys = []string{"ca.crt", "tls.crt", "tls.key"}

// ReadSecret returns a Secret's data, or why it cannot.
type ReadSecret func(namespace, name string) (map[string][]byte, error)

// Overlay lays spec over base: every field spec sets wins, every field it leaves out keeps
// base's value. Nothing is applied here; the result has passed Check.
func Overlay(base Settings, spec *v1alpha1.RouterHostsConfigSpec, read ReadSecret) (Settings, error) {
	s := base
	s.DefaultTags = slices.Clone(base.DefaultTags)
	if spec == nil {
		return s, s.Check()
	}
	for _, f := range specFields {
		if err := f(&s, spec, read); err != nil {
			return base, err
		}
	}
	if err := s.Check(); err != nil {
		return base, err
	}
	return s, nil
}

// specField lays one field of a RouterHostsConfig's spec over s, when the spec sets it, or
// says why it cannot.
type specField func(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, read ReadSecret) error

// specFields are the spec's fields, one function each. The order matters once: clusterName
// before defaultTags, which may name the cluster too.
var specFields = [...]specField{
	clusterName, defaultTags, ipResolution, gracePeriod, brake, policy, domains, interval, optIn,
	tenancy, budgets, ownership, server,
}

func ownership(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if spec.Ownership == nil || spec.Ownership.SilentClusterAfter == nil {
		return nil
	}
	d := spec.Ownership.SilentClusterAfter.Duration
	if d < 0 {
		return fmt.Errorf("spec.ownership.silentClusterAfter %s is negative", d)
	}
	s.SilentClusterAfter = d
	return nil
}

func clusterName(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if spec.ClusterName != "" {
		s.ClusterName = spec.ClusterName
	}
	return nil
}

// defaultTags may carry the cluster's name in a cluster: tag, as the design's defaultTags do,
// which must then agree with spec.clusterName.
func defaultTags(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if spec.DefaultTags == nil {
		return nil
	}
	cluster, user, err := splitDefaultTags(spec.DefaultTags)
	if err != nil {
		return fmt.Errorf("spec.defaultTags: %w", err)
	}
	switch {
	case cluster == "":
	case spec.ClusterName != "" && cluster != spec.ClusterName:
		return fmt.Errorf("spec.defaultTags names cluster %q but spec.clusterName is %q", cluster, spec.ClusterName)
	default:
		s.ClusterName = cluster
	}
	s.DefaultTags = user
	return nil
}

func ipResolution(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if spec.IPResolution == nil {
		return nil
	}
	steps := make([]string, 0, len(spec.IPResolution))
	for i, st := range spec.IPResolution {
		step, err := strategyOf(st)
		if err != nil {
			return fmt.Errorf("spec.ipResolution[%d]: %w", i, err)
		}
		steps = append(steps, step)
	}
	chain, err := source.ParseIPResolution(steps)
	if err != nil {
		return fmt.Errorf("spec.ipResolution: %w", err)
	}
	s.IPResolution = chain
	return nil
}

func gracePeriod(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if spec.Deletion == nil || spec.Deletion.GracePeriodSeconds == nil {
		return nil
	}
	if *spec.Deletion.GracePeriodSeconds < 0 {
		return fmt.Errorf("spec.deletion.gracePeriodSeconds must not be negative")
	}
	s.GracePeriod = time.Duration(*spec.Deletion.GracePeriodSeconds) * time.Second
	return nil
}

func brake(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if spec.Deletion == nil || spec.Deletion.Brake == nil {
		return nil
	}
	b := spec.Deletion.Brake
	for _, p := range []struct {
		v    *int32
		out  *float64
		name string
	}{{b.Percent, &s.Brake.Share, "percent %d: want 0 (no brake) to 100"},
		{b.NamespacePercent, &s.Brake.NamespaceShare, "namespacePercent %d: want 0 (no namespace's brake) to 100"}} {
		if p.v == nil {
			continue
		}
		if *p.v < 0 || *p.v > 100 {
			return fmt.Errorf("spec.deletion.brake."+p.name, *p.v)
		}
		*p.out = float64(*p.v) / 100
	}
	setInts(intField{b.Minimum, &s.Brake.Minimum}, intField{b.NamespaceMinimum, &s.Brake.NamespaceMinimum})
	if b.Confirm != "" {
		s.Brake.Confirm = b.Confirm
	}
	return nil
}

func policy(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if spec.Policy == "" {
		return nil
	}
	p, err := plan.ParsePolicy(spec.Policy)
	if err != nil {
		return fmt.Errorf("spec.policy: %w", err)
	}
	s.Policy = p
	return nil
}

func domains(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if spec.DomainFilter != nil {
		s.DomainFilter = spec.DomainFilter
	}
	if spec.ExcludeDomains != nil {
		s.ExcludeDomains = spec.ExcludeDomains
	}
	return nil
}

func interval(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if spec.Interval != nil {
		s.Interval = time.Duration(*spec.Interval) * time.Second
	}
	return nil
}

func optIn(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	o := spec.OptIn
	if o == nil {
		return nil
	}
	if o.IngressClasses != nil {
		s.OptIn.IngressClasses = o.IngressClasses
	}
	if o.GatewayNames != nil {
		s.OptIn.GatewayNames = o.GatewayNames
	}
	if o.ExternalDNSAnnotations != nil {
		s.OptIn.ExternalDNSAnnotations = *o.ExternalDNSAnnotations
	}
	if err := s.OptIn.Check(); err != nil {
		return fmt.Errorf("spec.optIn: %w", err)
	}
	return nil
}

func tenancy(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	t := spec.Tenancy
	if t == nil {
		return nil
	}
	if t.NamespaceDomains != nil {
		s.Tenancy.Domains = nil
		for _, d := range t.NamespaceDomains {
			s.Tenancy.Domains = append(s.Tenancy.Domains, registry.NamespaceDomains{Namespace: d.Namespace, Domains: d.Domains})
		}
	}
	if t.AdoptionNamespaces != nil {
		s.Tenancy.Adopters = slices.Clone(t.AdoptionNamespaces)
	}
	if t.MaxGracePeriodSeconds != nil {
		s.Tenancy.MaxGracePeriod = time.Duration(*t.MaxGracePeriodSeconds) * time.Second
	}
	if err := s.Tenancy.Check(); err != nil {
		return fmt.Errorf("spec.tenancy: %w", err)
	}
	return nil
}

func budgets(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, _ ReadSecret) error {
	if b := spec.Budgets; b != nil {
		setInts(intField{b.EntriesPerObject, &s.Budgets.EntriesPerObject}, intField{b.AliasesPerObject, &s.Budgets.AliasesPerObject},
			intField{b.TagsPerObject, &s.Budgets.TagsPerObject}, intField{b.EntriesPerNamespace, &s.Budgets.EntriesPerNamespace},
			intField{b.WritesPerSync, &s.Budgets.WritesPerSync}, intField{b.ObjectWritesPerMinute, &s.Budgets.ObjectWritesPerMinute},
			intField{b.NamespaceWritesPerMinute, &s.Budgets.NamespaceWritesPerMinute})
	}
	return nil
}

// server names the router and, in a Secret, the mTLS material to reach it with.
func server(s *Settings, spec *v1alpha1.RouterHostsConfigSpec, read ReadSecret) error {
	srv := spec.Server
	if srv == nil {
		return nil
	}
	s.Endpoint, s.ServerName = srv.Endpoint, srv.ServerName
	if srv.VerifyDNS != "" {
		if err := CheckHostPort(srv.VerifyDNS); err != nil {
			return fmt.Errorf("spec.server.verifyDNS: %w", err)
		}
		s.VerifyDNS = srv.VerifyDNS
	}
	if srv.CompactOwnEntries != nil {
		s.CompactOwnEntries = *srv.CompactOwnEntries
	}
	if ref := srv.TLSSecretRef; ref != nil {
		keys, err := readKeys(read, ref.Namespace, ref.Name)
		if err != nil {
			return fmt.Errorf("spec.server.tlsSecretRef: %w", err)
		}
		s.Secret, s.Keys = ref.Namespace+"/"+ref.Name, keys
	}
	return nil
}

// CheckHostPort refuses an address that is not host:port, as a DNS server is named.
func CheckHostPort(addr string) error {
	if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" {
		return fmt.Errorf("%q: want host:port", addr)
	}
	return nil
}

// intField is a spec's integer field, nil when unset, and the setting it fills.
type intField struct {
	v   *int32
	out *int
}

// setInts fills each setting whose field the spec sets.
func setInts(fields ...intField) {
	for _, f := range fields {
		if f.v != nil {
			*f.out = int(*f.v)
		}
	}
}

// strategyOf writes one ipResolution step as its --ip-resolution value.
func strategyOf(st v1alpha1.IPResolution) (string, error) {
	switch st.Type {
	case v1alpha1.StepIngressController, v1alpha1.StepService:
		if st.ServiceName == "" || st.ServiceNamespace == "" {
			return "", fmt.Errorf("type %s needs serviceName and serviceNamespace", st.Type)
		}
		return string(source.StrategyService) + ":" + st.ServiceNamespace + "/" + st.ServiceName, nil
	case v1alpha1.StepStatic:
		return string(source.StrategyStatic) + ":" + st.Address, nil
	case v1alpha1.StepIngressStatus:
		return string(source.StrategyIngressStatus), nil
	case v1alpha1.StepGatewayStatus:
		return string(source.StrategyGatewayStatus), nil
	}
	return "", fmt.Errorf("unknown type %q (want %s, %s, %s, %s or %s)", st.Type, v1alpha1.StepIngressController,
		v1alpha1.StepService, v1alpha1.StepStatic, v1alpha1.StepIngressStatus, v1alpha1.StepGatewayStatus)
}

// MaterialError is why the mTLS material of the Secret a RouterHostsConfig names could not be
// loaded: the Secret is missing or unreadable, lacks a key, or holds PEM that does not parse.
type MaterialError struct{ Err error }

func (e *MaterialError) Error() string { return e.Err.Error() }
func (e *MaterialError) Unwrap() error { return e.Err }

func readKeys(read ReadSecret, namespace, name string) (*routerhosts.PEM, error) {
	if read == nil {
		return nil, &MaterialError{fmt.Errorf("Secret %s/%s: not readable", namespace, name)}
	}
	data, err := read(namespace, name)
	if err != nil {
		return nil, &MaterialError{fmt.Errorf("Secret %s/%s: %w", namespace, name, err)}
	}
	for _, k := range SecretKeys {
		if len(data[k]) == 0 {
			return nil, &MaterialError{fmt.Errorf("Secret %s/%s has no %s", namespace, name, k)}
		}
	}
	keys, err := routerhosts.ParsePEM(data["ca.crt"], data["tls.crt"], data["tls.key"])
	if err != nil {
		return nil, &MaterialError{fmt.Errorf("Secret %s/%s: %w", namespace, name, err)}
	}
	return keys, nil
}

// splitDefaultTags reads a list of default tags as a RouterHostsConfig writes it: the owner
// tag is implied and dropped, cluster:<name> names the cluster, and any other reserved tag is
// an error.
func splitDefaultTags(tags []string) (cluster string, user []string, err error) {
	for _, t := range tags {
		switch {
		case t == registry.TagOwner:
		case strings.HasPrefix(t, registry.PrefixCluster):
			name := strings.TrimPrefix(t, registry.PrefixCluster)
			if cluster != "" && cluster != name {
				return "", nil, fmt.Errorf("default tags name two clusters, %q and %q", cluster, name)
			}
			cluster = name
		default:
			if err := registry.CheckUserTag(t); err != nil {
				return "", nil, fmt.Errorf("default tag: %w", err)
			}
			user = append(user, t)
		}
	}
	return cluster, user, nil
}
