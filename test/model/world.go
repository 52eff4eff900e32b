// Package model is the ownership simulation: every party that writes to a router (several
// installations of the operator, namesakes, twins, a renamed identity, two external-dns
// webhooks, tenants, a person editing the router by hand) plays against one in-memory router
// with the real server's semantics, in one process, on one fake clock, through the real
// controller, registry, planner and provider. After every step each invariant of the contract
// (contract.go, docs/ownership.md's "The contract") is checked against what the simulation
// can see: the router's entries and their history, every installation's objects, and the
// clock. A seed replays a run; a failure shrinks to a short sequence of steps.
package model

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	testingclock "k8s.io/utils/clock/testing"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/webhook"
)

// Interval is every installation's --interval: a sync step stands for the sync it runs.
const Interval = time.Minute

// compactAbove is every installation's threshold of events (registry.Config.CompactAbove):
// small, so that the entries of every party pass it within a few writes and compaction runs
// (--compact-own-entries) throughout.
const compactAbove = 6

// objectBudget is every installation's --object-writes-per-minute in the simulation: small,
// so that a flapping object reaches it within a few steps.
const objectBudget = 6

// silentAfter is every installation's --silent-cluster-after.
const silentAfter = 4 * time.Hour

// cluster is one set of objects: a Kubernetes cluster's (or one namespace set of it, for
// twins), or the records one external-dns publishes to its webhook. It is the model's ground
// truth of whose an entry is: the cluster whose installation wrote it.
type cluster struct {
	key     string
	webhook bool
	// namespaces are the namespaces its installation reads.
	namespaces []string
	objects    []*object
	// hosts are the hostnames its objects draw from.
	hosts []string
}

// object is one Kubernetes object (or external-dns record) that wants its hostnames at its
// addresses.
type object struct {
	uid, ns, name string
	hosts, ips    []string
	shared        bool
	grace         *time.Duration
	created       time.Time
}

// installation is one running operator (or webhook): its settings and the loop it runs.
type installation struct {
	name    string
	cluster *cluster
	// clusterName and id are its --cluster-name and identity now; ids are every identity it
	// has had, so that its own entries under a former one are told from another's.
	clusterName, id string
	ids, names      []string
	grace           time.Duration
	up              bool
	ctl             *controller.Controller
	conn            *grpc.ClientConn
	// last is the report of its last sync.
	last *controller.Report
	// syncs counts its syncs; lastSync is when it last ran one.
	syncs    int
	lastSync time.Time
	// started is when its process started; heard the former identities someone wrote since,
	// and proved those one of its entries proved its own since (an entry naming an object
	// here, at one of its syncs).
	started       time.Time
	heard, proved map[string]bool
	// firstRead is when the process's first sync read the router; zero before.
	firstRead time.Time
}

// World is the simulation's state: the router, the clock, the parties, and what the
// invariants remember of the router's history.
type World struct {
	rnd      *rand.Rand
	clock    *testingclock.FakeClock
	start    time.Time
	svc      *inmemory.Service
	stop     []func()
	clusters []*cluster
	insts    []*installation
	nextUID  int
	log      *logrus.Logger
	ctx      context.Context
	history  history
	// steps counts the actions played.
	steps int
	// compacted are the CompactAggregates the installations sent during the step being played.
	compactMu sync.Mutex
	compacted []compactCall
}

// compactCall is one CompactAggregates an installation sent: by the entry's ID, or (id empty)
// by a threshold, which no installation may send.
type compactCall struct{ inst, id string }

// compactions is an installation's connection to the router, which tells the world every
// CompactAggregates it carries.
type compactions struct {
	grpc.ClientConnInterface
	w    *World
	inst string
}

func (c compactions) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if r, ok := args.(*pb.CompactAggregatesRequest); ok {
		c.w.compactMu.Lock()
		c.w.compacted = append(c.w.compacted, compactCall{inst: c.inst, id: r.GetAggregateId()})
		c.w.compactMu.Unlock()
	}
	return c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

// hosts and ips are the small pools every party draws from, so that they meet.
var (
	hosts = []string{"app.lan", "web.lan", "db.lan", "nas.lan", "git.lan", "wiki.lan", "cam.lan", "tv.lan"}
	ips   = []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}
)

// NewWorld builds the parties on an empty router; seed drives every random choice the world
// makes itself (the router's IDs).
func NewWorld(seed int64) (*World, error) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &World{rnd: rand.New(rand.NewSource(seed)), clock: testingclock.NewFakeClock(start), start: start, ctx: context.Background()}
	w.log = logrus.New()
	w.log.SetLevel(logrus.PanicLevel)
	w.svc = inmemory.NewService(inmemory.NewStoreAt(w.clock, rand.New(rand.NewSource(seed))))
	w.history = newHistory()
	mk := func(key string, webhook bool, ns ...string) *cluster {
		c := &cluster{key: key, webhook: webhook, namespaces: ns, hosts: hosts}
		w.clusters = append(w.clusters, c)
		return c
	}
	a, t, n := mk("A", false, "default", "infra"), mk("T", false, "twin"), mk("N", false, "default")
	// The twin's objects want names of their own: two installations on one identity that
	// want one hostname still fight over it (docs/ownership.md, twins).
	t.hosts = []string{"tw1.lan", "tw2.lan", "tw3.lan"}
	c := mk("C", false, "default", "tenant")
	w1, w2 := mk("W1", true, "edns"), mk("W2", true, "edns")
	// The parties: a; its twin t (the same identity, reading a namespace of its own); a
	// namesake n (the same name, another identity); c, another cluster; two webhooks on the
	// default name, each with an identity of its own.
	specs := []struct {
		name, clusterName, id string
		c                     *cluster
		grace                 time.Duration
	}{
		{"a", "home", "a0000001", a, 30 * time.Second},
		{"t", "home", "a0000001", t, 0},
		{"n", "home", "b0000002", n, 2 * time.Minute},
		{"c", "lab", "c0000003", c, 0},
		{"w1", "default", "e0000001", w1, 30 * time.Second},
		{"w2", "default", "e0000002", w2, 30 * time.Second},
	}
	for _, s := range specs {
		in := &installation{name: s.name, cluster: s.c, clusterName: s.clusterName, id: s.id, ids: []string{s.id}, names: []string{s.clusterName}, grace: s.grace}
		w.insts = append(w.insts, in)
		if err := w.startInstallation(in); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Close stops every installation's connection and the router.
func (w *World) Close() {
	for _, in := range w.insts {
		if in.conn != nil {
			_ = in.conn.Close()
		}
	}
	for _, f := range w.stop {
		f()
	}
}

// clusterView is an installation's view of its cluster: the endpoints its objects want.
type clusterView struct{ in *installation }

func (s clusterView) AddEventHandler(func()) {}

func (s clusterView) Endpoints(context.Context) ([]*endpoint.Endpoint, error) {
	c := s.in.cluster
	var out []*endpoint.Endpoint
	for _, o := range c.objects {
		if len(o.ips) == 0 {
			continue
		}
		for _, h := range o.hosts {
			ref := endpoint.SourceRef{Version: "v1", Group: "networking.k8s.io", Kind: "Ingress", Namespace: o.ns, Name: o.name, UID: o.uid, CreationTimestamp: o.created}
			if c.webhook {
				ref = webhook.Ref(o.ns, h)
				ref.CreationTimestamp = o.created
			}
			ep := &endpoint.Endpoint{Hostname: h, Targets: slices.Clone(o.ips), Sources: []endpoint.SourceRef{ref}, Shared: o.shared, GracePeriod: o.grace}
			out = append(out, ep)
		}
	}
	return out, nil
}

// startInstallation starts (or restarts) an installation with its settings now: a new
// process, which has seen nothing yet.
func (w *World) startInstallation(in *installation) error {
	if in.conn != nil {
		_ = in.conn.Close()
	}
	in.started, in.heard, in.proved, in.firstRead = w.clock.Now(), map[string]bool{}, map[string]bool{}, time.Time{}
	budgets := registry.DefaultBudgets()
	budgets.ObjectWritesPerMinute = objectBudget
	cfg := registry.Config{ClusterName: in.clusterName, ClusterID: in.id, GracePeriod: in.grace, Budgets: budgets,
		Brake: registry.DefaultBrake(), SilentClusterAfter: silentAfter, Log: w.log, CompactOwnEntries: true, CompactAbove: compactAbove,
		// A webhook says its UIDs are hashed from hostnames, as its wiring does.
		HostnameUIDs: in.cluster.webhook}
	reg, err := registry.New(cfg)
	if err != nil {
		return fmt.Errorf("installation %s: %w", in.name, err)
	}
	conn, stop, err := inmemory.Dial(w.svc)
	if err != nil {
		return fmt.Errorf("installation %s: %w", in.name, err)
	}
	w.stop = append(w.stop, stop)
	// One write at a time: writes in flight together would take their IDs in any order.
	prov := routerhosts.NewFromConn(compactions{ClientConnInterface: conn, w: w, inst: in.name}, routerhosts.Options{Log: w.log, WriteConcurrency: 1})
	in.conn = nil
	in.ctl = controller.New(controller.Config{Sources: []controller.EndpointSource{clusterView{in}}, Registry: reg, Provider: prov,
		Interval: Interval, Log: w.log, Clock: w.clock})
	in.up = true
	return nil
}

// entries is the router as it stands, by ID.
func (w *World) entries() map[string]*pb.HostEntry {
	out := map[string]*pb.HostEntry{}
	for _, e := range w.svc.Store().Live() {
		out[e.GetId()] = e
	}
	return out
}

// sortedIDs are the router's entry IDs in order, which actions pick from by index so that a
// step replays on a shrunk run.
func sortedIDs(m map[string]*pb.HostEntry) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (w *World) installation(name string) *installation {
	for _, in := range w.insts {
		if in.name == name {
			return in
		}
	}
	return nil
}

func (w *World) clusterOf(key string) *cluster {
	for _, c := range w.clusters {
		if c.key == key {
			return c
		}
	}
	return nil
}

// wants reports whether a live object of c wants host at ip.
func (c *cluster) wants(host, ip string) bool {
	for _, o := range c.objects {
		if slices.Contains(o.hosts, host) && slices.Contains(o.ips, ip) {
			return true
		}
	}
	return false
}

// claims reports whether an object of c wants an address and names itself by uid: an
// endpoint of its source carries it.
func (c *cluster) claims(uid string) bool {
	return slices.ContainsFunc(c.objects, func(o *object) bool { return o.uid == uid && len(o.ips) > 0 })
}

// owner is the installation whose tags an entry carries now: its cluster name and identity,
// as docs/ownership.md defines an entry's owner; nil for a hand-made entry.
func (w *World) owner(e *pb.HostEntry) *installation {
	if e == nil || !slices.Contains(e.GetTags(), registry.TagOwner) {
		return nil
	}
	op := &pb.HostEntry{Tags: operatorTags(e)}
	name, id := tagValue(op, registry.PrefixCluster), tagValue(op, registry.PrefixClusterID)
	for _, in := range w.insts {
		if slices.Contains(in.names, name) && slices.Contains(in.ids, id) {
			return in
		}
	}
	return nil
}

func tagValue(e *pb.HostEntry, prefix string) string {
	for _, t := range e.GetTags() {
		if v, ok := strings.CutPrefix(t, prefix); ok {
			return v
		}
	}
	return ""
}
