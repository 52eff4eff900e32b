package source

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	netlisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Config configures a source.
type Config struct {
	// Namespace restricts the source to one namespace; "" means all.
	Namespace string
	// LabelSelector restricts the source to matching objects; it is applied by the apiserver in
	// list and watch, so filtered objects never reach the cache.
	LabelSelector string
	// IPResolution is the ordered chain used when an object has no ip-address annotation. It is
	// used only when Resolver is nil.
	IPResolution []Strategy
	// Resolver resolves addresses; sources of one process share it.
	Resolver *Resolver
	// DiscoveryInterval is how often sources of custom resources look for CRDs that were missing.
	DiscoveryInterval time.Duration
	// Warner receives problems with objects, for Warning events; nil means log only.
	Warner Warner
	Log    logrus.FieldLogger
}

// withDefaults fills in the logger and, when none is shared, a resolver of the source's own.
func (cfg Config) withDefaults(ctx context.Context, client Clients) (Config, error) {
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if cfg.Resolver == nil {
		r, err := NewResolver(ctx, client, cfg.IPResolution)
		if err != nil {
			return cfg, err
		}
		cfg.Resolver = r
	}
	return cfg, nil
}

// IngressSource lists opted-in networking.k8s.io/v1 Ingresses.
type IngressSource struct {
	cfg      Config
	ingress  netlisters.IngressLister
	synced   cache.InformerSynced
	handlers handlers
	reports  *reporter
}

// NewIngressSource starts the Ingress informer and waits for its cache, so the first sync sees
// the whole cluster rather than an empty one.
func NewIngressSource(ctx context.Context, client Clients, cfg Config) (*IngressSource, error) {
	cfg, err := cfg.withDefaults(ctx, client)
	if err != nil {
		return nil, err
	}
	s := &IngressSource{cfg: cfg, reports: newReporter(cfg.Log, cfg.Warner)}
	ings := client.Ingresses.Ingresses(cfg.Namespace)
	inf, err := newInformer(client, ings.List, ings.Watch, &networkingv1.Ingress{},
		func(o *metav1.ListOptions) { o.LabelSelector = cfg.LabelSelector }, slimIngress)
	if err != nil {
		return nil, fmt.Errorf("the Ingress informer: %w", err)
	}
	s.ingress = netlisters.NewIngressLister(inf.GetIndexer())
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onChange(nil, obj) },
		UpdateFunc: func(old, obj any) { s.onChange(old, obj) },
		DeleteFunc: func(obj any) { s.onChange(nil, obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching Ingresses: %w", err)
	}
	s.synced = inf.HasSynced
	go inf.RunWithContext(ctx)
	if !waitSynced(ctx, s.synced) {
		return nil, fmt.Errorf("waiting for the Ingress cache: %w", context.Cause(ctx))
	}
	return s, nil
}

// AddEventHandler registers handler for changes of opted-in Ingresses and of the Services the
// resolver watches.
func (s *IngressSource) AddEventHandler(handler func()) {
	s.handlers.add(handler)
	s.cfg.Resolver.AddEventHandler(handler)
}

// onChange fires the handlers when an opted-in Ingress (or one that was opted in) changed.
// Resyncs that deliver the same resourceVersion are not changes.
func (s *IngressSource) onChange(old, obj any) {
	cur := asIngress(obj)
	if old != nil {
		prev := asIngress(old)
		if prev != nil && cur != nil && prev.ResourceVersion == cur.ResourceVersion {
			return
		}
		if optedIn(prev) || optedIn(cur) {
			s.handlers.fire()
		}
		return
	}
	if optedIn(cur) {
		s.handlers.fire()
	}
}

func asIngress(obj any) *networkingv1.Ingress {
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		return o
	case cache.DeletedFinalStateUnknown:
		i, _ := o.Obj.(*networkingv1.Ingress)
		return i
	}
	return nil
}

func optedIn(ing *networkingv1.Ingress) bool {
	return ing != nil && ing.Annotations[AnnotationEnabled] == "true"
}

// Synced reports whether the caches this source reads are filled.
func (s *IngressSource) Synced() bool { return s.synced() && s.cfg.Resolver.Synced() }

// Endpoints lists every opted-in Ingress from the cache. An unsynced cache is an error, never
// an empty answer, because an empty answer would plan deletes.
func (s *IngressSource) Endpoints(context.Context) ([]*endpoint.Endpoint, error) {
	if !s.synced() || !s.cfg.Resolver.Synced() {
		return nil, fmt.Errorf("ingress source: informer cache not synced")
	}
	list, err := s.ingress.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing Ingresses from the cache: %w", err)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].Namespace != list[j].Namespace {
			return list[i].Namespace < list[j].Namespace
		}
		return list[i].Name < list[j].Name
	})
	var out []*endpoint.Endpoint
	seen := make(map[types.UID]bool, len(list))
	for _, ing := range list {
		if !optedIn(ing) {
			continue
		}
		seen[ing.UID] = true
		eps, ref, problems := s.endpointsFor(ing)
		s.reports.report(ref, ing.ResourceVersion, problems)
		out = append(out, eps...)
	}
	s.reports.forgetExcept(seen)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Hostname < out[j].Hostname })
	return out, nil
}

// endpointsFor turns one opted-in Ingress into endpoints, with the problems found on the way.
func (s *IngressSource) endpointsFor(ing *networkingv1.Ingress) ([]*endpoint.Endpoint, endpoint.SourceRef, []Problem) {
	var (
		raw      []string
		problems []Problem
	)
	for _, rule := range ing.Spec.Rules {
		if rule.Host == "" {
			continue
		}
		if strings.Contains(rule.Host, "*") {
			problems = append(problems, invalidHostname("wildcard host %q skipped: router-hosts has no wildcard entries", rule.Host))
			continue
		}
		raw = append(raw, rule.Host)
	}
	status := make([]string, 0, len(ing.Status.LoadBalancer.Ingress))
	for _, in := range ing.Status.LoadBalancer.Ingress {
		status = append(status, in.IP)
	}
	ref := endpoint.SourceRef{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name,
		UID: string(ing.UID), CreationTimestamp: ing.CreationTimestamp.Time}
	eps, more := buildEndpoints(ref, raw, ing.Annotations, s.cfg.Resolver, status, true)
	return eps, ref, append(problems, more...)
}

// buildEndpoints is the part every annotated kind shares: normalise the hostnames, apply the
// override annotations, resolve the targets (holding when nothing resolves), and make one
// endpoint per hostname.
func buildEndpoints(ref endpoint.SourceRef, rawHosts []string, ann map[string]string, r *Resolver, status []string, hasStatus bool) ([]*endpoint.Endpoint, []Problem) {
	o := parseOverrides(ann)
	problems := o.problems
	var hosts []string
	seen := map[string]bool{}
	for _, raw := range rawHosts {
		h, err := endpoint.NormalizeHostname(raw)
		if err != nil {
			problems = append(problems, invalidHostname("host skipped: %v", err))
			continue
		}
		if !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return nil, problems
	}
	var targets []string
	switch {
	case o.badIPs:
		// Held: keep whatever exists until the annotation is fixed.
	case o.ips != nil:
		targets = o.ips
	default:
		targets = r.Resolve(status, hasStatus)
		if len(targets) == 0 {
			problems = append(problems, Problem{Reason: ReasonNoAddress, Message: fmt.Sprintf("no address from --ip-resolution %s; existing entries are held", r)})
		}
	}
	out := make([]*endpoint.Endpoint, 0, len(hosts))
	for _, h := range hosts {
		aliases, errs := endpoint.NormalizeAliases(h, o.aliases)
		for _, err := range errs {
			problems = append(problems, invalidAnnotation("annotation %s: %v; dropped", AnnotationAliases, err))
		}
		out = append(out, &endpoint.Endpoint{
			Hostname: h, Targets: targets, Aliases: aliases, Tags: o.tags,
			Sources: []endpoint.SourceRef{ref}, GracePeriod: o.gracePeriod,
		})
	}
	return out, problems
}

// Problems returns the problems of each object, by UID, as of the last Endpoints.
func (s *IngressSource) Problems() map[string][]Problem { return s.reports.problems() }
