// Package registry owns the operator's ownership policy. Ownership lives only in tags on the
// router-hosts entries, so any replica, after any restart, reaches the same decisions from one
// ListHosts: which entries are ours, which belong to another cluster, which may be adopted,
// which namespace holds a hostname, and when a pending deletion is due.
package registry

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

const (
	commentPrefix      = "router-hosts-operator: "
	defaultGracePeriod = 5 * time.Minute
)

// Config is the registry's policy.
type Config struct {
	// ClusterName scopes ownership so several clusters can share one router-hosts server.
	ClusterName string
	// ClusterID is the installation's identity (Identity), written on every entry in a tag of
	// its own beside the cluster's name, so that a namesake's entries are never taken for this cluster's and a
	// rename keeps them. Empty: ownership by name alone (the external-dns webhook's, which has
	// no cluster of its own to derive it from).
	ClusterID string
	// DefaultTags are added to every entry the operator creates.
	DefaultTags []string
	// GracePeriod is how long a planned deletion waits, unless the entry carries its own.
	GracePeriod time.Duration
	// Policy is the plan policy; create-only also forbids adoption, which edits an entry.
	Policy plan.Policy
	// DomainFilter and ExcludeDomains are the domains whose names the operator manages, as
	// external-dns's --domain-filter and --exclude-domains; hostnames and aliases alike.
	DomainFilter, ExcludeDomains []string
	// Tenancy says which names each namespace may claim, which may adopt, and the longest
	// grace period; Budgets bound objects, namespaces and syncs.
	Tenancy Tenancy
	Budgets Budgets
	// Brake holds back a sync that would delete most of the cluster's entries at once.
	Brake Brake
	Log   logrus.FieldLogger
}

// Registry applies ownership policy around the pure plan. It keeps no state between calls:
// what a sync may reuse from the last (parsed tags, merges) is handed in by its caller, so
// every decision is a function of the entries, the claims, the settings and the time.
type Registry struct {
	cfg        Config
	clusterTag string
	// ownerTags are the tags every entry of this cluster carries: k8s-operator, the cluster's
	// name and, in a tag of its own, its identity.
	ownerTags []string
	domains   endpoint.DomainFilter
	ten       tenancy
	log       logrus.FieldLogger
}

// Parsed is what the operator reads from one entry's tags: the view of its own block and
// whose the entry is, as far as its tags alone say.
type Parsed struct {
	v     view
	class class
}

// Parse reads rec's tags.
func (r *Registry) Parse(rec *endpoint.Record) *Parsed {
	v := viewOf(rec)
	return &Parsed{v: v, class: r.classOf(&v)}
}

// Own reports whether the entry's tags alone make it this installation's: its identity and
// its name.
func (p *Parsed) Own() bool { return p.class == own }

// Namesake is the identity of the other installation writing this cluster's name that wrote
// the entry, "" when it is not such an entry.
func (p *Parsed) Namesake() string {
	if p.class != namesake {
		return ""
	}
	id, _ := p.v.clusterID()
	return id
}

// Marked reports whether the entry carries a pending-deletion mark the operator wrote.
func (p *Parsed) Marked() bool {
	_, marked := p.v.value(PrefixPending)
	return marked
}

// Parser parses entries' tags, from a cache of its own when an entry's tags are those it
// parsed before (the registry's Parse when there is none).
type Parser interface {
	Parse(rec *endpoint.Record) *Parsed
}

// Merges hands desired the merge of a hostname it made before from the same claims and
// entries; a merge handed back counts as used by the sync, which is the cache's own account.
// What desired merges afresh, and the merges it finds no longer hold, come back in
// Wanted.Merges.
type Merges interface {
	Merged(host string, claims []*endpoint.Endpoint, owned []*endpoint.Record) (out *endpoint.Endpoint, ok bool)
}

// Merge is one hostname's merge and what it was made from.
type Merge struct {
	Host   string
	Claims []*endpoint.Endpoint
	Owned  []*endpoint.Record
	// Out is the endpoint the plan sees; nil when every claim lost.
	Out *endpoint.Endpoint
	// Conflicted: the merge turned claims down, or what followed it changed its endpoint; a
	// merge reused would leave that unreported, so it must not be kept (nor one made before
	// for the hostname).
	Conflicted bool
	// Marked: one of the entries is marked for deletion.
	Marked bool
}

// Wanted is what desired made of the sources' claims: one endpoint per hostname the cluster is
// to have, the claims and the parts of claims it turned down, and the merges it made afresh
// or found no longer hold, for a caller that keeps them to hand back through Merges.
type Wanted struct {
	Endpoints []*endpoint.Endpoint
	// Conflicts are the claims turned down; Problems the parts of claims dropped, such as
	// reserved tags.
	Conflicts []Conflict
	Problems  []Problem
	Merges    []Merge
}

// New validates cfg and returns a Registry.
func New(cfg Config) (*Registry, error) {
	r := &Registry{}
	if err := r.Reconfigure(cfg); err != nil {
		return nil, err
	}
	return r, nil
}

// Reconfigure validates cfg and applies it from the next classify on; on an error the
// configuration in use is kept. It must not run beside a sync.
func (r *Registry) Reconfigure(cfg Config) error {
	clusterTag := ClusterTag(cfg.ClusterName)
	if cfg.ClusterName == "" {
		return fmt.Errorf("cluster name is empty")
	}
	if strings.Contains(cfg.ClusterName, IdentitySeparator) {
		return fmt.Errorf("cluster name %q: %q separated the name from the identity in the cluster: tag of earlier versions, which are still read", cfg.ClusterName, IdentitySeparator)
	}
	if err := endpoint.ValidateTag(clusterTag); err != nil {
		return fmt.Errorf("cluster name: %w", err)
	}
	if err := checkIdentity(cfg.ClusterID); err != nil {
		return err
	}
	ownerTags := []string{TagOwner, clusterTag}
	if cfg.ClusterID != "" {
		ownerTags = append(ownerTags, IdentityTag(cfg.ClusterID))
	}
	for _, t := range cfg.DefaultTags {
		if err := endpoint.ValidateTag(t); err != nil {
			return fmt.Errorf("default tag: %w", err)
		}
		if err := CheckUserTag(t); err != nil {
			return fmt.Errorf("default tag: %w", err)
		}
	}
	if cfg.GracePeriod < 0 {
		return fmt.Errorf("grace period %s is negative", cfg.GracePeriod)
	}
	domains, err := endpoint.NewDomainFilter(cfg.DomainFilter, cfg.ExcludeDomains)
	if err != nil {
		return fmt.Errorf("domain filter: %w", err)
	}
	ten, err := compileTenancy(cfg.Tenancy)
	if err != nil {
		return fmt.Errorf("tenancy: %w", err)
	}
	if ten.maxGrace > 0 && cfg.GracePeriod > ten.maxGrace {
		return fmt.Errorf("grace period %s is above the maximum grace period %s", cfg.GracePeriod, ten.maxGrace)
	}
	if err := checkBudgets(cfg.Budgets); err != nil {
		return err
	}
	if cfg.Policy == "" {
		cfg.Policy = plan.Sync
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if err := checkBrake(cfg.Brake); err != nil {
		return err
	}
	r.cfg, r.clusterTag, r.ownerTags, r.domains, r.ten, r.log = cfg, clusterTag, ownerTags, domains, ten, cfg.Log
	return nil
}

// Manages reports whether the operator manages hostname (normalised): the domain filter's
// rule, which aliases obey too.
func (r *Registry) Manages(hostname string) bool { return r.domains.Match(hostname) }

// Policy is --policy, which the plan applies: it shapes how entries are matched to addresses
// (under create-only an address that moved is a new entry, not an update in place). The
// registry's policy stage holds what the plan leaves to it, adoption.
func (r *Registry) Policy() plan.Policy { return r.cfg.Policy }

// ClusterName is the name of the cluster whose entries the registry owns.
func (r *Registry) ClusterName() string { return r.cfg.ClusterName }

// ClusterID is the installation's identity, "" when ownership is by name alone.
func (r *Registry) ClusterID() string { return r.cfg.ClusterID }

// SplitDefaultTags reads a list of default tags as a RouterHostsConfig writes it: the owner
// tag is implied and dropped, cluster:<name> names the cluster, and any other reserved tag is
// an error.
func SplitDefaultTags(tags []string) (cluster string, user []string, err error) {
	for _, t := range tags {
		switch {
		case t == TagOwner:
		case strings.HasPrefix(t, PrefixCluster):
			name := strings.TrimPrefix(t, PrefixCluster)
			if cluster != "" && cluster != name {
				return "", nil, fmt.Errorf("default tags name two clusters, %q and %q", cluster, name)
			}
			cluster = name
		default:
			if err := CheckUserTag(t); err != nil {
				return "", nil, fmt.Errorf("default tag: %w", err)
			}
			user = append(user, t)
		}
	}
	return cluster, user, nil
}

// State is the server's entries sorted by who owns them. classify makes it; every later step
// only reads it.
type State struct {
	// Owned entries carry k8s-operator and this installation's identity (or, written by an
	// earlier version, no identity and one of the claims' UIDs or this cluster's name), all
	// written by the operator.
	Owned []endpoint.Record
	// Foreign entries carry k8s-operator and another cluster's tag or another installation's
	// identity; they are never written. Keyed by lowercase hostname.
	Foreign map[string][]endpoint.Record
	// Namesakes are the other installations that write this cluster's name, by identity,
	// sorted. Unclaimed counts the entries an earlier version wrote under this cluster's name
	// that no object here wants while a namesake shows: they may be the namesake's, and are
	// left alone.
	Namesakes []Namesake
	Unclaimed int
	// Former are the identities this installation had before (the same cluster name, every
	// object their entries name lives here, and nothing seen writing them): their entries are
	// this cluster's, taken up in place, by identity, sorted.
	Former []Namesake
	// Unowned entries lack k8s-operator; they may only be adopted. Keyed by lowercase
	// hostname, because DNS names compare without case.
	Unowned map[string][]endpoint.Record

	parser  Parser
	witness Witness
}

// view is the view of an entry some operator wrote (every owned entry is one); the zero view
// for a hand-made or another cluster's.
func (s *State) view(rec *endpoint.Record) view {
	if p := s.parser.Parse(rec); p.class == own || p.class == legacy || p.class == renamed || p.class == namesake {
		return p.v
	}
	return view{}
}

// Conflict is a claim on a name that lost to the namespace holding it, to another cluster or
// to a hand-made entry.
type Conflict struct {
	// Hostname is the name: the claim's hostname, or one of its aliases (Alias).
	Hostname string
	Alias    bool
	Loser    endpoint.SourceRef
	// Winner names who holds the name: "namespace <ns>", "namespace/name" of the older claim,
	// "cluster <name>" or a hand-made entry.
	Winner string
	// Stage is the claim stage that turned the claim down (claimStages).
	Stage string
}

// Problem is a part of an object's claim the registry refused to write.
type Problem struct {
	Source endpoint.SourceRef
	Reason ProblemReason
	// Tag is the user-supplied tag that was dropped because it is reserved.
	Tag     string
	Message string
	// Stage is the claim stage that refused it (claimStages), or "rate" for a write the
	// write-rate budgets held.
	Stage string
}

// ForeignCount is the number of entries owned by other clusters.
func (s *State) ForeignCount() int {
	n := 0
	for _, rs := range s.Foreign {
		n += len(rs)
	}
	return n
}

// classify sorts the records of one read by owner, their tags parsed by parser (nil: parsed
// afresh), with what witness saw other writers do (nil: nothing). Only tags the operator wrote
// count: a tag an adopted entry carried before adoption (recorded in its loan) never makes it
// another cluster's, nor marks it for deletion. The entries the tags leave open (an earlier
// version's, this identity's under another name, this name's under another identity) are
// decided by claims, the sources' endpoints (resolveOpen).
func (r *Registry) classify(records []endpoint.Record, claims []*endpoint.Endpoint, parser Parser, witness Witness) *State {
	if parser == nil {
		parser = r
	}
	if witness == nil {
		witness = noWitness{}
	}
	st := &State{Foreign: map[string][]endpoint.Record{}, Unowned: map[string][]endpoint.Record{},
		Owned: make([]endpoint.Record, 0, len(records)), parser: parser, witness: witness}
	var open []endpoint.Record
	for i := range records {
		rec := &records[i]
		key := strings.ToLower(rec.Hostname)
		p := parser.Parse(rec)
		switch p.class {
		case unowned:
			st.Unowned[key] = append(st.Unowned[key], *rec)
		case own:
			st.Owned = append(st.Owned, *rec)
		case legacy, renamed, namesake:
			open = append(open, *rec)
		default:
			st.Foreign[key] = append(st.Foreign[key], *rec)
		}
	}
	if len(open) > 0 {
		uids := make(map[string]bool, len(claims))
		for _, ep := range claims {
			for _, s := range ep.Sources {
				uids[s.UID] = true
			}
		}
		r.resolveOpen(st, open, func(uid string) bool { return uids[uid] })
	}
	return st
}

// Marked reports whether one of these entries carries a pending-deletion mark the operator
// wrote.
func (s *State) Marked(owned []*endpoint.Record) bool {
	return slices.ContainsFunc(owned, s.marked)
}

// marked reports whether rec carries a pending-deletion mark the operator wrote.
func (s *State) marked(rec *endpoint.Record) bool {
	v := s.view(rec)
	_, marked := v.value(PrefixPending)
	return marked
}

// current turns the owned entries, and the unowned ones that desired hostnames could adopt,
// into plan input, less the entries of settled hostnames (lowercase), which the plan does not
// look at. An adopted entry keeps the user's tags, verbatim and in order, ahead of the
// operator's block, which opens with TagPreExisting and closes with the loan record; for an
// adoption candidate, its tags and the record adopting it would write.
func (r *Registry) current(st *State, desired []*endpoint.Endpoint, settled map[string]bool) []plan.Current {
	out := make([]plan.Current, 0, max(len(st.Owned)-len(settled), 0))
	for i := range st.Owned {
		rec := st.Owned[i]
		if len(settled) > 0 && settled[strings.ToLower(rec.Hostname)] {
			continue
		}
		c := plan.Current{Record: rec, Class: plan.Created}
		if v := st.view(&st.Owned[i]); v.has(TagPreExisting) {
			c.Class = plan.Adopted
			c.Keep = append(append([]string{}, v.user...), TagPreExisting)
			if v.loan != nil {
				c.Trail = v.loan.trail()
			}
		}
		out = append(out, c)
	}
	for _, ep := range desired {
		for _, rec := range st.Unowned[ep.Hostname] {
			if !r.adoptable(ep, &rec) {
				continue
			}
			out = append(out, plan.Current{Record: rec, Class: plan.Unowned,
				Keep: append(append([]string{}, rec.Tags...), TagPreExisting), Trail: loanOf(&rec).trail()})
		}
	}
	return out
}

// adoptable reports whether the namespace that won ep may adopt rec, a hand-made entry of its
// hostname.
func (r *Registry) adoptable(ep *endpoint.Endpoint, rec *endpoint.Record) bool {
	return !rec.HasTag(TagNoAdopt) && r.ten.mayAdopt(ep.Sources[0].Namespace)
}

// desired merges the sources' endpoints into one per hostname and derives the ownership tags,
// default tags and provenance comment, by the claim stages in their order (claimStages).
//
// now is the sync's clock reading, which says whose grace period has ended. merges (may be
// nil) hands back the merge of a hostname whose claims and entries are those it was made from.
// desired reads st and eps and writes to neither: a claim a stage changes is a copy.
func (r *Registry) desired(now time.Time, eps []*endpoint.Endpoint, st *State, merges Merges) Wanted {
	return r.runClaimStages(claimStages[:], now, eps, st, merges)
}

// desired runs the claim stages of table in order.
func (r *Registry) runClaimStages(table []claimStage, now time.Time, eps []*endpoint.Endpoint, st *State, merges Merges) Wanted {
	in := &claimsIn{now: now, st: st, owned: ownedByHost(st), car: carriersOf(st), merges: merges}
	var w Wanted
	for _, s := range table {
		v := s.run(r, in, eps)
		eps = v.endpoints
		for _, c := range v.conflicts {
			c.Stage = s.name
			w.Conflicts = append(w.Conflicts, c)
		}
		for _, p := range v.problems {
			p.Stage = s.name
			w.Problems = append(w.Problems, p)
		}
		in.change(v.changed)
		if v.grouped != nil {
			in.byHost = v.grouped
		}
		w.Merges = append(w.Merges, v.merges...)
	}
	w.Endpoints = eps
	if merges != nil {
		w.Merges = in.unkept(w.Merges)
	}
	return w
}

// ownedByHost is st's owned entries by lowercase hostname.
func ownedByHost(st *State) map[string][]*endpoint.Record {
	out := make(map[string][]*endpoint.Record, len(st.Owned))
	for i := range st.Owned {
		rec := &st.Owned[i]
		key := strings.ToLower(rec.Hostname)
		out[key] = append(out[key], rec)
	}
	return out
}

// SourceUIDs returns the UIDs of the objects that want rec's address, read from the tags the
// operator wrote; observers use it instead of parsing tags.
func SourceUIDs(rec *endpoint.Record) []string {
	v := viewOf(rec)
	return v.values(PrefixSource)
}

// Owner returns the namespace and the kinds named on rec by the operator, and whether it
// adopted the entry (a loan it gives back when no object wants the name any more).
func Owner(rec *endpoint.Record) (namespace string, kinds []string, adopted bool) {
	v := viewOf(rec)
	namespace, _ = v.value(PrefixNamespace)
	return namespace, v.values(PrefixKind), v.has(TagPreExisting)
}

// ours reports whether the operator's tags make the entry this cluster's: its identity, or
// (no identity configured, or an entry of an earlier version) its name and no other, since an
// entry that names two clusters was written by hand and belongs to neither. A sync decides an
// earlier version's entry of another name by its claims (resolveOpen); outside a sync only
// the name counts.
func (r *Registry) ours(v *view) bool {
	switch r.classOf(v) {
	case own, renamed:
		return true
	case legacy:
		return !slices.ContainsFunc(v.clusterNames(), func(n string) bool { return n != r.cfg.ClusterName })
	}
	return false
}

// StillApplies reports whether change c may still be written to fresh, the entry as re-read
// after a version conflict. An adoption goes ahead only on the entry exactly as it was read,
// since its loan records what was found; a change to an adopted entry only while its tags are
// as read, since their order says whose they are; anything else only while the entry is this
// cluster's. A change turned down here is planned again from a fresh read.
func (r *Registry) StillApplies(c *plan.Change, fresh *endpoint.Record) bool {
	v := viewOf(fresh)
	if c.Action == plan.Adopt {
		return !v.has(TagOwner) && endpoint.Diff(c.Old, fresh) == 0 && slices.Equal(c.Old.Tags, fresh.Tags)
	}
	if !r.ours(&v) {
		return false
	}
	if old := viewOf(c.Old); old.has(TagPreExisting) {
		return slices.Equal(c.Old.Tags, fresh.Tags)
	}
	return true
}

// Owns reports whether rec is this cluster's, without touching the registry's state: for
// readers outside a sync.
func (r *Registry) Owns(rec *endpoint.Record) bool {
	v := viewOf(rec)
	return r.ours(&v)
}

// OwnedAmong is Owns for the entries of one read, with no object to claim any: the rule a sync
// uses for an earlier version's entry of this cluster's name (no identity), which is this
// cluster's only while no other identity writes the name, since it may be that namesake's.
// The external-dns webhook answers GET /records by it, so that external-dns, which deletes what
// it does not publish, never sees another webhook's entry.
func (r *Registry) OwnedAmong(records []endpoint.Record) func(*endpoint.Record) bool {
	shows := false
	for i := range records {
		v := viewOf(&records[i])
		if r.classOf(&v) == namesake {
			shows = true
			break
		}
	}
	return func(rec *endpoint.Record) bool {
		v := viewOf(rec)
		if shows && r.classOf(&v) == legacy {
			return false
		}
		return r.ours(&v)
	}
}

// Marked reports whether rec carries a pending-deletion mark the operator wrote.
func Marked(rec *endpoint.Record) bool {
	v := viewOf(rec)
	_, marked := v.value(PrefixPending)
	return marked
}
