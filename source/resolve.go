package source

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// StrategyKind names a step of the --ip-resolution chain.
type StrategyKind string

// The IP resolution strategies.
const (
	// StrategyIngressStatus is an Ingress's own load-balancer status.
	StrategyIngressStatus StrategyKind = "ingress-status"
	// StrategyGatewayStatus is the addresses of a Gateway API route's parent Gateways. Routes
	// try it first unless --ip-resolution places it.
	StrategyGatewayStatus StrategyKind = "gateway-status"
	// StrategyService is the load-balancer IPs (else external IPs) of a named Service.
	StrategyService StrategyKind = "service"
	// StrategyStatic is a fixed address.
	StrategyStatic StrategyKind = "static"
)

// Strategy is one step of the --ip-resolution chain.
type Strategy struct {
	Kind StrategyKind
	// Namespace and Name name the Service of a service strategy.
	Namespace, Name string
	// IP is the address of a static strategy, canonical.
	IP string
}

// String renders the strategy as it is written on the command line.
func (s Strategy) String() string {
	switch s.Kind {
	case StrategyService:
		return string(StrategyService) + ":" + s.Namespace + "/" + s.Name
	case StrategyStatic:
		return string(StrategyStatic) + ":" + s.IP
	}
	return string(s.Kind)
}

// ParseIPResolution parses the --ip-resolution values, in order.
func ParseIPResolution(specs []string) ([]Strategy, error) {
	out := make([]Strategy, 0, len(specs))
	for _, spec := range specs {
		word, arg, _ := strings.Cut(strings.TrimSpace(spec), ":")
		kind := StrategyKind(word)
		switch kind {
		case StrategyIngressStatus, StrategyGatewayStatus:
			if arg != "" {
				return nil, fmt.Errorf("%q: %s takes no argument", spec, kind)
			}
			out = append(out, Strategy{Kind: kind})
		case StrategyService:
			ns, name, ok := strings.Cut(arg, "/")
			if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1035Label(name)) > 0 {
				return nil, fmt.Errorf("%q: want service:<namespace>/<name>", spec)
			}
			out = append(out, Strategy{Kind: kind, Namespace: ns, Name: name})
		case StrategyStatic:
			ip, err := endpoint.NormalizeIP(arg)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", spec, err)
			}
			out = append(out, Strategy{Kind: kind, IP: ip})
		default:
			return nil, fmt.Errorf("%q: unknown strategy (want ingress-status, gateway-status, service:<namespace>/<name> or static:<ip>)", spec)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the chain is empty")
	}
	return out, nil
}

// serviceIPs returns a Service's LoadBalancer IPs, else its externalIPs, canonical and sorted.
func serviceIPs(svc *corev1.Service) []string {
	var ips []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if ip, err := endpoint.NormalizeIP(in.IP); err == nil {
			ips = append(ips, ip)
		}
	}
	if len(ips) == 0 {
		for _, raw := range svc.Spec.ExternalIPs {
			if ip, err := endpoint.NormalizeIP(raw); err == nil {
				ips = append(ips, ip)
			}
		}
	}
	return endpoint.SortedUnique(ips)
}

// statusIPs returns the IPs of a load-balancer status; hostname-only entries are skipped, since
// router-hosts needs an address.
func statusIPs(raw []string) []string {
	var ips []string
	for _, r := range raw {
		if ip, err := endpoint.NormalizeIP(r); err == nil {
			ips = append(ips, ip)
		}
	}
	return endpoint.SortedUnique(ips)
}

// Resolver walks the --ip-resolution chain for every source. It watches only the Services the
// chain names, one informer each with a field selector, so the operator never caches every
// Service in the cluster; sources share one Resolver.
type Resolver struct {
	client   Clients
	ctx      context.Context
	handlers handlers
	// changes counts changes of the watched Services and of the chain: an address resolved
	// before one may differ after it.
	changes atomic.Uint64

	mu       sync.Mutex
	chain    []Strategy
	services map[string]listersv1.ServiceLister // by "namespace/name"
	synced   []cache.InformerSynced
	// dns answers hostnames given where an address is wanted; nil leaves them unresolved.
	dns *DNS
}

// UseDNS resolves, from now on, the hostnames that load balancers report and that targets
// name, through d; an answer that changes counts as a change of what the chain resolves.
func (r *Resolver) UseDNS(d *DNS) {
	d.mu.Lock()
	d.changed = r.changed
	d.mu.Unlock()
	r.mu.Lock()
	r.dns = d
	r.mu.Unlock()
}

// Touch tells the DNS cache that names are still in use: a sync that reuses what an object
// gave before does not look them up, and a name nobody uses is forgotten when its answer
// expires.
func (r *Resolver) Touch(names []string) {
	r.mu.Lock()
	d := r.dns
	r.mu.Unlock()
	if d != nil {
		d.touch(names)
	}
}

// Unresolved says why an object has no address right now, when it is not simply that nothing
// yields one. Waiting marks a hold that ends by itself within moments (DNS has not answered
// yet): the entries are held all the same, but it is no warning.
type Unresolved struct {
	Why     string
	Waiting bool
}

// MaxNamesPerObject bounds the hostnames DNS resolves for the addresses of one object (a target
// annotation's, a load balancer's): an object may write its annotations, and a thousand names
// of one would fill the cache and keep the DNS server busy for every other object.
const MaxNamesPerObject = 8

// Addresses returns ips, canonical, with the addresses DNS gives for names; while any name is
// unanswered or its lookup fails, none, and why: a partial answer must not drop an address.
// More names than MaxNamesPerObject are none either, and none of them is looked up.
func (r *Resolver) Addresses(ips, names []string) ([]string, Unresolved) {
	out := statusIPs(ips)
	if len(names) == 0 {
		return out, Unresolved{}
	}
	if len(names) > MaxNamesPerObject {
		return nil, Unresolved{Why: fmt.Sprintf("%d hostnames to resolve, more than the %d one object may name; none is looked up", len(names), MaxNamesPerObject)}
	}
	r.mu.Lock()
	d := r.dns
	r.mu.Unlock()
	for _, n := range names {
		if d == nil {
			return nil, Unresolved{Why: "no DNS server to resolve " + n}
		}
		got, u := d.Lookup(n)
		if u.Why != "" {
			return nil, u
		}
		out = append(out, got...)
	}
	return endpoint.SortedUnique(out), Unresolved{}
}

// chainWait bounds the wait for the caches of the Services a chain names.
const chainWait = 30 * time.Second

// NewResolver starts the Service informers the chain needs and waits for their caches. The
// informers run until ctx ends.
func NewResolver(ctx context.Context, client Clients, chain []Strategy) (*Resolver, error) {
	r := &Resolver{client: client, ctx: ctx, services: map[string]listersv1.ServiceLister{}}
	if err := r.SetChain(chain); err != nil {
		return nil, err
	}
	return r, nil
}

// SetChain replaces the chain, starting the informers of Services it names that are not
// watched yet and waiting for their caches; on an error the chain in use is kept. Services
// the old chain named stay watched (a handful of objects), so going back costs nothing.
func (r *Resolver) SetChain(chain []Strategy) error {
	if len(chain) == 0 {
		return fmt.Errorf("the chain is empty")
	}
	var started []cache.InformerSynced
	for _, st := range chain {
		key := st.Namespace + "/" + st.Name
		r.mu.Lock()
		watched := r.services[key] != nil
		r.mu.Unlock()
		if st.Kind != StrategyService || watched {
			continue
		}
		name := st.Name
		svcs := r.client.Services(st.Namespace)
		inf, err := newInformer(r.client, svcs.List, svcs.Watch, &corev1.Service{}, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}, slimService)
		if err != nil {
			return fmt.Errorf("the informer of Service %s: %w", key, err)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { r.changed() },
			UpdateFunc: func(old, obj any) {
				a, _ := old.(*corev1.Service)
				b, _ := obj.(*corev1.Service)
				if a == nil || b == nil || a.ResourceVersion != b.ResourceVersion {
					r.changed()
				}
			},
			DeleteFunc: func(any) { r.changed() },
		}); err != nil {
			return fmt.Errorf("watching Service %s: %w", key, err)
		}
		go inf.RunWithContext(r.ctx)
		r.mu.Lock()
		r.services[key] = listersv1.NewServiceLister(inf.GetIndexer())
		r.synced = append(r.synced, inf.HasSynced)
		r.mu.Unlock()
		started = append(started, inf.HasSynced)
	}
	// Bounded, because a change of the chain is applied between two syncs, which wait for it.
	wctx, cancel := context.WithTimeout(r.ctx, chainWait)
	defer cancel()
	if !waitSynced(wctx, started...) {
		return fmt.Errorf("waiting for the Service caches: %w", context.Cause(wctx))
	}
	r.mu.Lock()
	r.chain = chain
	r.mu.Unlock()
	r.changed()
	return nil
}

func (r *Resolver) changed() {
	r.changes.Add(1)
	r.handlers.fire()
}

// epoch changes whenever an address the chain resolves may have changed.
func (r *Resolver) epoch() uint64 { return r.changes.Load() }

// AddEventHandler registers a callback for changes of the watched Services.
func (r *Resolver) AddEventHandler(fn func()) { r.handlers.add(fn) }

// Synced reports whether every Service cache is filled.
func (r *Resolver) Synced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Reported is what an object reports about its own address: an Ingress's load-balancer status, a
// Service's addresses. Kinds without such a report leave it zero, and the chain's status steps
// pass them over.
type Reported struct {
	// From is the chain step the addresses answer.
	From StrategyKind
	// IPs are the reported addresses as written; Names the hostnames reported without an
	// address (a cloud load balancer's), which DNS resolves.
	IPs, Names []string
	// Final: without addresses of its own the object has none. For a kind without a chain
	// step (a Service) the chain never applies; for one with a step (a route whose Gateway
	// has no address yet) the chain stops there. Missing then says why.
	Final   bool
	Missing string
}

// addPoint takes one point of a load-balancer status: its IP, else its hostname.
func (o *Reported) addPoint(ip, hostname string) {
	if ip == "" && hostname != "" {
		o.Names = append(o.Names, hostname)
		return
	}
	o.IPs = append(o.IPs, ip)
}

// ipsFirst applies the rule that only a load balancer reporting no IP is resolved by its
// hostnames (a cloud's): beside IPs they are dropped, and returned so a kind may say so.
func (o *Reported) ipsFirst() (dropped []string) {
	if len(o.IPs) == 0 {
		return nil
	}
	dropped, o.Names = o.Names, nil
	return dropped
}

// Resolve returns the addresses of the first strategy that yields any, or none and why.
func (r *Resolver) Resolve(own Reported) ([]string, Unresolved) {
	if own.Final && own.From == "" {
		ips, u := r.Addresses(own.IPs, own.Names)
		if len(ips) > 0 || u.Why != "" {
			return ips, u
		}
		return nil, Unresolved{Why: own.Missing}
	}
	r.mu.Lock()
	chain, services := r.chain, r.services
	r.mu.Unlock()
	if own.From == StrategyGatewayStatus && !slices.ContainsFunc(chain, func(s Strategy) bool { return s.Kind == StrategyGatewayStatus }) {
		chain = append([]Strategy{{Kind: StrategyGatewayStatus}}, chain...)
	}
	for _, st := range chain {
		var ips []string
		switch st.Kind {
		case StrategyIngressStatus, StrategyGatewayStatus:
			if own.From == st.Kind {
				var u Unresolved
				// A status name not answered yet holds the step: falling through would
				// write a later step's address, then move the entry once DNS answers.
				if ips, u = r.Addresses(own.IPs, own.Names); u.Why != "" {
					return nil, u
				}
				if len(ips) == 0 && own.Final {
					return nil, Unresolved{Why: own.Missing}
				}
			}
		case StrategyService:
			if l := services[st.Namespace+"/"+st.Name]; l != nil {
				if svc, err := l.Services(st.Namespace).Get(st.Name); err == nil {
					ips = serviceIPs(svc)
				}
			}
		case StrategyStatic:
			ips = []string{st.IP}
		}
		if len(ips) > 0 {
			return ips, Unresolved{}
		}
	}
	return nil, Unresolved{Why: "no address from --ip-resolution " + chainString(chain)}
}

// String renders the chain as on the command line.
func (r *Resolver) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return chainString(r.chain)
}

func chainString(chain []Strategy) string {
	parts := make([]string, 0, len(chain))
	for _, st := range chain {
		parts = append(parts, st.String())
	}
	return strings.Join(parts, ",")
}
