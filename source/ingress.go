package source

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	netlisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Config configures a source.
type Config struct {
	// Namespace restricts the source to one namespace; "" means all.
	Namespace string
	// IPResolution is the ordered chain used when an object has no ip-address annotation.
	IPResolution []Strategy
	Log          logrus.FieldLogger
}

// IngressSource lists opted-in networking.k8s.io/v1 Ingresses.
type IngressSource struct {
	cfg      Config
	log      logrus.FieldLogger
	ingress  netlisters.IngressLister
	synced   []cache.InformerSynced
	services map[string]listersv1.ServiceLister // by "namespace/name"
	handlers handlers
	reports  *reporter
}

// NewIngressSource starts the informers and waits for their caches, so the first sync sees the
// whole cluster rather than an empty one. Only the Services named by service: strategies are
// watched, each through a field selector, so the operator never caches every Service.
func NewIngressSource(ctx context.Context, client kubernetes.Interface, cfg Config) (*IngressSource, error) {
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	s := &IngressSource{cfg: cfg, log: cfg.Log, services: map[string]listersv1.ServiceLister{}, reports: newReporter(cfg.Log)}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.Namespace),
		informers.WithTransform(stripForCache))
	ing := factory.Networking().V1().Ingresses()
	s.ingress = ing.Lister()
	if _, err := ing.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onChange(nil, obj) },
		UpdateFunc: func(old, obj any) { s.onChange(old, obj) },
		DeleteFunc: func(obj any) { s.onChange(nil, obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching Ingresses: %w", err)
	}
	s.synced = append(s.synced, ing.Informer().HasSynced)
	factories := []informers.SharedInformerFactory{factory}
	for _, st := range cfg.IPResolution {
		key := st.Namespace + "/" + st.Name
		if st.Kind != StrategyService || s.services[key] != nil {
			continue
		}
		name := st.Name
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(st.Namespace),
			informers.WithTransform(stripForCache),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			}))
		svc := f.Core().V1().Services()
		s.services[key] = svc.Lister()
		if _, err := svc.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.handlers.fire() },
			UpdateFunc: func(old, obj any) { s.onServiceChange(old, obj) },
			DeleteFunc: func(any) { s.handlers.fire() },
		}); err != nil {
			return nil, fmt.Errorf("watching Service %s: %w", key, err)
		}
		s.synced = append(s.synced, svc.Informer().HasSynced)
		factories = append(factories, f)
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return nil, fmt.Errorf("waiting for the Ingress and Service caches: %w", context.Cause(ctx))
	}
	return s, nil
}

// stripForCache drops what the operator never reads (managed fields, the last-applied
// annotation) before objects enter the cache; on a large cluster that is most of their size.
func stripForCache(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a != nil {
			if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
				delete(a, corev1.LastAppliedConfigAnnotation)
				m.SetAnnotations(a)
			}
		}
	}
	return obj, nil
}

// AddEventHandler registers handler for changes of opted-in Ingresses and watched Services.
func (s *IngressSource) AddEventHandler(handler func()) { s.handlers.add(handler) }

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

func (s *IngressSource) onServiceChange(old, obj any) {
	a, _ := old.(*corev1.Service)
	b, _ := obj.(*corev1.Service)
	if a != nil && b != nil && a.ResourceVersion == b.ResourceVersion {
		return
	}
	s.handlers.fire()
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

// Endpoints lists every opted-in Ingress from the cache. An unsynced cache is an error, never
// an empty answer, because an empty answer would plan deletes.
func (s *IngressSource) Endpoints(context.Context) ([]*endpoint.Endpoint, error) {
	for _, synced := range s.synced {
		if !synced() {
			return nil, fmt.Errorf("ingress source: informer cache not synced")
		}
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
		eps, problems := s.endpointsFor(ing)
		s.reports.report(ing.UID, ing.ResourceVersion, logrus.Fields{"kind": "Ingress", "namespace": ing.Namespace, "name": ing.Name}, problems)
		out = append(out, eps...)
	}
	s.reports.forgetExcept(seen)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Hostname < out[j].Hostname })
	return out, nil
}

// endpointsFor turns one opted-in Ingress into endpoints, with the problems found on the way.
func (s *IngressSource) endpointsFor(ing *networkingv1.Ingress) ([]*endpoint.Endpoint, []string) {
	o := parseOverrides(ing.Annotations)
	problems := o.problems
	var hosts []string
	seen := map[string]bool{}
	for _, rule := range ing.Spec.Rules {
		if rule.Host == "" {
			continue
		}
		if strings.Contains(rule.Host, "*") {
			problems = append(problems, fmt.Sprintf("wildcard host %q skipped: router-hosts has no wildcard entries", rule.Host))
			continue
		}
		h, err := endpoint.NormalizeHostname(rule.Host)
		if err != nil {
			problems = append(problems, fmt.Sprintf("host skipped: %v", err))
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
		targets = s.resolve(ing)
		if len(targets) == 0 {
			problems = append(problems, fmt.Sprintf("no address from --ip-resolution %s; existing entries are held", s.chain()))
		}
	}
	ref := endpoint.SourceRef{Group: "networking.k8s.io", Kind: "Ingress", Namespace: ing.Namespace, Name: ing.Name,
		UID: string(ing.UID), CreationTimestamp: ing.CreationTimestamp.Time}
	out := make([]*endpoint.Endpoint, 0, len(hosts))
	for _, h := range hosts {
		aliases, errs := endpoint.NormalizeAliases(h, o.aliases)
		for _, err := range errs {
			problems = append(problems, fmt.Sprintf("annotation %s: %v; dropped", AnnotationAliases, err))
		}
		out = append(out, &endpoint.Endpoint{
			Hostname: h, Targets: targets, Aliases: aliases, Tags: o.tags,
			Sources: []endpoint.SourceRef{ref}, GracePeriod: o.gracePeriod,
		})
	}
	return out, problems
}

// resolve walks the chain: the first strategy that yields an address wins.
func (s *IngressSource) resolve(ing *networkingv1.Ingress) []string {
	for _, st := range s.cfg.IPResolution {
		var ips []string
		switch st.Kind {
		case StrategyIngressStatus:
			raw := make([]string, 0, len(ing.Status.LoadBalancer.Ingress))
			for _, in := range ing.Status.LoadBalancer.Ingress {
				raw = append(raw, in.IP)
			}
			ips = statusIPs(raw)
		case StrategyService:
			if l := s.services[st.Namespace+"/"+st.Name]; l != nil {
				if svc, err := l.Services(st.Namespace).Get(st.Name); err == nil {
					ips = serviceIPs(svc)
				}
			}
		case StrategyStatic:
			ips = []string{st.IP}
		}
		if len(ips) > 0 {
			return ips
		}
	}
	return nil
}

func (s *IngressSource) chain() string {
	parts := make([]string, 0, len(s.cfg.IPResolution))
	for _, st := range s.cfg.IPResolution {
		parts = append(parts, st.String())
	}
	return strings.Join(parts, ",")
}

// reporter logs an object's problems once per version of the object, not on every sync.
type reporter struct {
	log  logrus.FieldLogger
	mu   sync.Mutex
	seen map[types.UID]string // UID → resourceVersion last reported
}

func newReporter(log logrus.FieldLogger) *reporter {
	return &reporter{log: log, seen: map[types.UID]string{}}
}

func (r *reporter) report(uid types.UID, version string, fields logrus.Fields, problems []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(problems) == 0 {
		delete(r.seen, uid)
		return
	}
	if r.seen[uid] == version {
		return
	}
	r.seen[uid] = version
	for _, p := range problems {
		r.log.WithFields(fields).Warn(p)
	}
}

// forgetExcept drops memory of objects that are gone, keeping the map bounded.
func (r *reporter) forgetExcept(present map[types.UID]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid := range r.seen {
		if !present[uid] {
			delete(r.seen, uid)
		}
	}
}
