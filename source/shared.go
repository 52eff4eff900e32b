package source

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Config configures a source.
type Config struct {
	// Namespace restricts the source to one namespace; "" means all.
	Namespace string
	// LabelSelector restricts the source to matching objects; it is applied by the apiserver in
	// list and watch, so filtered objects never reach the cache.
	LabelSelector string
	// Resolver resolves addresses by the --ip-resolution chain; the sources of one process
	// share it. Required.
	Resolver *Resolver
	// DiscoveryInterval is how often sources of custom resources look for CRDs that were missing.
	DiscoveryInterval time.Duration
	// Warner receives problems with objects, for Warning events; nil means log only.
	Warner Warner
	Log    logrus.FieldLogger
	// OptIn is how objects are managed besides their annotation, at start; the annotation
	// set to "false" opts an object out of all of it.
	OptIn OptIn

	// optIn is the source's OptIn in use, which its kind reads too.
	optIn *liveOptIn
}

// kind is what one resource kind supplies; Source does the rest (change notifications,
// opt-in filtering, problems per object, sorted endpoints, forgetting deleted objects). A new
// kind is one file implementing it plus one line in the table of kinds.go.
type kind interface {
	// start starts the kind's informers and returns once the caches it needs before the first
	// sync are filled. changed is told of every change of one of the kind's objects (old is
	// nil for adds and deletes) and, with nil and nil, of anything else the kind reads that
	// may change what its objects claim.
	start(ctx context.Context, c Clients, cfg Config, changed func(old, cur metav1.Object)) error
	// synced reports whether the caches the kind reads are filled.
	synced() bool
	// objects lists the kind's cached objects, opted in or not.
	objects() ([]metav1.Object, error)
	// optedIn reports whether an object asks for entries.
	optedIn(metav1.Object) bool
	// claim reads what one opted-in object asks for.
	claim(metav1.Object) claim
	// rules are the rights the kind needs on the API; the operator's RBAC is generated from
	// them, so a kind that reads something new says so here.
	rules() []Rule
}

// claim is what one object asks for, before hostnames are normalised and addresses resolved.
type claim struct {
	ref endpoint.SourceRef
	// hosts are the hostnames as written; bad ones are reported and skipped.
	hosts []string
	// overrides are the object's ip-address, tags, aliases and grace period.
	overrides overrides
	// own is the address the object itself reports, for the resolution chain.
	own Reported
	// hostOwn, when set, is the address reported for each hostname on its own (a route's
	// names come from different Gateways); own applies to hostnames it does not list.
	hostOwn map[string]Reported
	// problems are those found while reading the object.
	problems []Problem
	// noHosts, when set, is the problem reported if the claim ends up with no hostname at all
	// (a Service names its hostnames in annotations only).
	noHosts string
}

// Source lists the opted-in objects of one kind from informer caches. It never writes and
// never calls the API during a sync.
type Source struct {
	name     string
	kind     kind
	cfg      Config
	handlers handlers
	reports  *reporter

	// others counts changes of what the kind reads besides its objects (a route's Gateways);
	// together with the resolver's count it dates every memo.
	others atomic.Uint64
	// memo holds what each object gave the last sync: a full resync re-reads every object,
	// and one whose resourceVersion and inputs are unchanged gives the same endpoints, so
	// only changed objects are read again.
	memoMu sync.Mutex
	memo   map[types.UID]*memo
	// pass counts the listings; a memo not met in the last one is of an object gone.
	pass uint64
	// order is the last listing, in order.
	order order
}

// memo is what one object gave a sync, valid while its resourceVersion and the epoch hold.
type memo struct {
	version  string
	epoch    uint64
	pass     uint64
	optedIn  bool
	eps      []*endpoint.Endpoint
	problems []Problem
	// ref is the object's reference, kept only when it has problems to report again.
	ref *endpoint.SourceRef
	// names are the hostnames DNS resolves for the object, kept in use while the memo is.
	names []string
}

// newSource starts k's informers. Adding a kind never touches this function.
func newSource(ctx context.Context, name string, k kind, c Clients, cfg Config) (*Source, error) {
	if cfg.Resolver == nil {
		return nil, fmt.Errorf("%s source: no resolver", name)
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	cfg.optIn = &liveOptIn{}
	cfg.optIn.p.Store(compileOptIn(cfg.OptIn))
	s := &Source{name: name, kind: k, cfg: cfg, reports: newReporter(cfg.Log, cfg.Warner)}
	if err := k.start(ctx, c, cfg, s.changed); err != nil {
		return nil, fmt.Errorf("%s source: %w", name, err)
	}
	return s, nil
}

// Name is the source's --source name.
func (s *Source) Name() string { return s.name }

// changed fires the handlers when an opted-in object (or one that was opted in) changed.
// Resyncs that deliver the same resourceVersion are not changes.
func (s *Source) changed(old, cur metav1.Object) {
	switch {
	case old == nil && cur == nil:
		s.others.Add(1)
		s.handlers.fire()
	case old != nil && cur != nil && old.GetResourceVersion() == cur.GetResourceVersion():
	case (old != nil && s.optedIn(old)) || (cur != nil && s.optedIn(cur)):
		s.handlers.fire()
	}
}

// optedIn reports whether an object asks for entries: the kind's rule, or in the
// external-dns mode external-dns's hostname annotation.
func (s *Source) optedIn(o metav1.Object) bool {
	return s.kind.optedIn(o) || (s.externalDNS() && externalDNSOptedIn(o))
}

// externalDNS reports whether the source reads external-dns's annotations.
func (s *Source) externalDNS() bool {
	_, spec := s.kind.(specDriven)
	return s.cfg.optIn.load().externalDNS && !spec
}

// SetOptIn manages objects by o from the next sync on; a change re-reads every object and
// triggers a sync.
func (s *Source) SetOptIn(o OptIn) {
	cur := s.cfg.optIn.load()
	next := compileOptIn(o)
	if cur != nil && maps.Equal(cur.classes, next.classes) && maps.Equal(cur.gateways, next.gateways) && cur.externalDNS == next.externalDNS {
		return
	}
	s.cfg.optIn.p.Store(next)
	s.others.Add(1)
	s.handlers.fire()
}

// AddEventHandler registers handler for changes of opted-in objects and of the Services the
// resolver watches. It must be cheap: it runs on informer goroutines.
func (s *Source) AddEventHandler(handler func()) {
	s.handlers.add(handler)
	s.cfg.Resolver.AddEventHandler(handler)
}

// Synced reports whether the caches this source reads are filled.
func (s *Source) Synced() bool { return s.kind.synced() && s.cfg.Resolver.Synced() }

// Endpoints returns one endpoint per (object, hostname), sorted by hostname; the registry
// merges claims. An unsynced cache is an error, never an empty answer, because an empty answer
// would plan deletes.
func (s *Source) Endpoints(context.Context) ([]*endpoint.Endpoint, error) {
	if !s.Synced() {
		return nil, fmt.Errorf("%s source: informer cache not synced", s.name)
	}
	objs, err := s.kind.objects()
	if err != nil {
		return nil, fmt.Errorf("%s source: %w", s.name, err)
	}
	// The epoch is read before any object, so that a change arriving meanwhile dates the
	// memos of this sync as older than itself.
	epoch := s.others.Load() + s.cfg.Resolver.epoch()
	s.memoMu.Lock()
	defer s.memoMu.Unlock()
	if s.memo == nil {
		s.memo = make(map[types.UID]*memo, len(objs))
	}
	s.pass++
	var fresh []placed
	for _, o := range objs {
		uid, version := o.GetUID(), o.GetResourceVersion()
		m := s.memo[uid]
		if m != nil && m.version == version && m.epoch == epoch {
			m.pass = s.pass
			if m.names != nil {
				s.cfg.Resolver.Touch(m.names)
			}
			if m.optedIn {
				// An object without problems last time and this time has nothing to report.
				if len(m.problems) > 0 {
					s.reports.report(*m.ref, version, m.problems)
				}
			}
			continue
		}
		m = &memo{version: version, epoch: epoch, pass: s.pass, optedIn: s.optedIn(o)}
		s.memo[uid] = m
		if !m.optedIn {
			continue
		}
		c := s.kind.claim(o)
		if s.externalDNS() {
			addExternalDNS(&c, o)
		}
		m.eps, m.problems = buildEndpoints(&c, s.cfg.Resolver)
		m.names = c.dnsNames()
		if len(m.problems) > 0 {
			m.ref = &c.ref
		}
		s.reports.report(c.ref, version, m.problems)
		for _, ep := range m.eps {
			fresh = append(fresh, placed{ep, m})
		}
	}
	for uid, m := range s.memo {
		if m.pass != s.pass {
			delete(s.memo, uid) // gone from the cache
		}
	}
	s.reports.forgetExcept(func(uid types.UID) bool { m := s.memo[uid]; return m != nil && m.optedIn })
	return s.order.list(s.pass, fresh), nil
}

// Problems returns the problems of each object, by UID, as of the last Endpoints.
func (s *Source) Problems() map[string][]Problem { return s.reports.problems() }

// refOf is the reference an endpoint carries back to its object.
func refOf(group, version, kind string, o metav1.Object) endpoint.SourceRef {
	return endpoint.SourceRef{Group: group, Version: version, Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName(),
		UID: string(o.GetUID()), CreationTimestamp: o.GetCreationTimestamp().Time, Generation: o.GetGeneration()}
}

// annotatedClaim is the claim of a kind opted in and overridden by annotations.
func annotatedClaim(ref endpoint.SourceRef, o metav1.Object, hosts []string, own Reported, problems []Problem) claim {
	return claim{ref: ref, hosts: hosts, overrides: parseOverrides(o.GetAnnotations()), own: own, problems: problems}
}

// dnsNames are the hostnames DNS resolves for the claim: its target annotation's and those its
// status reports.
func (c *claim) dnsNames() []string {
	names := append(append([]string(nil), c.overrides.names...), c.own.Names...)
	for _, own := range c.hostOwn {
		names = append(names, own.Names...)
	}
	if len(names) == 0 {
		return nil
	}
	return endpoint.SortedUnique(names)
}

// enabled is the opt-in of annotated kinds.
func enabled(o metav1.Object) bool { return o.GetAnnotations()[AnnotationEnabled] == "true" }

// optedOut reports whether the object's annotation opts it out of a class-wide or
// Gateway-wide mode.
func optedOut(o metav1.Object) bool { return o.GetAnnotations()[AnnotationEnabled] == "false" }

// buildEndpoints is the part every kind shares: normalise the hostnames, apply the overrides,
// resolve the targets (holding when nothing resolves), and make one endpoint per hostname.
func buildEndpoints(c *claim, r *Resolver) ([]*endpoint.Endpoint, []Problem) {
	o := c.overrides
	problems := append(c.problems, o.problems...)
	var hosts []string
	seen := map[string]bool{}
	for _, raw := range c.hosts {
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
		if len(c.hosts) == 0 && c.noHosts != "" {
			problems = append(problems, invalidHostname("%s", c.noHosts))
		}
		return nil, problems
	}
	out := make([]*endpoint.Endpoint, 0, len(hosts))
	missing := map[string]bool{}
	for _, h := range hosts {
		var targets []string
		switch {
		case o.badIPs:
			// Held: keep whatever exists until the override is fixed.
		case o.ips != nil && o.names == nil:
			targets = o.ips
		default:
			var u Unresolved
			if o.names != nil {
				targets, u = r.Addresses(o.ips, o.names)
			} else {
				own, ok := c.hostOwn[h]
				if !ok {
					own = c.own
				}
				targets, u = r.Resolve(own)
			}
			// Held either way; waiting for DNS's first answer is no warning.
			if len(targets) == 0 && !u.Waiting && !missing[u.Why] {
				missing[u.Why] = true
				problems = append(problems, Problem{Reason: ReasonNoAddress, Message: u.Why + "; existing entries are held"})
			}
		}
		aliases, errs := endpoint.NormalizeAliases(h, o.aliases)
		for _, err := range errs {
			problems = append(problems, invalidAnnotation("%s: %v; dropped", o.aliasesFrom, err))
		}
		out = append(out, &endpoint.Endpoint{
			Hostname: h, Targets: targets, Aliases: aliases, Tags: o.tags,
			Sources: []endpoint.SourceRef{c.ref}, GracePeriod: o.gracePeriod, Shared: o.shared,
		})
	}
	return out, problems
}
