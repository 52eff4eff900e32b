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
	// HostnameUIDs: the source: UIDs of this installation's claims are hashed from their
	// hostnames (the external-dns webhook's), the same in every installation that claims the
	// name, so they prove no entry this installation's: no identity is taken up as one it had
	// before on their word.
	HostnameUIDs bool
	// SilentClusterAfter is how old the newest heartbeat of another installation may grow
	// before it is reported silent; this installation renews its own every quarter of it. Zero:
	// no mark is written and none is reported.
	SilentClusterAfter time.Duration
	// Interval is how often a full sync runs. The heartbeat carries it, since a release
	// probe is answered within it.
	Interval time.Duration
	Log      logrus.FieldLogger
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
	// coOwner is this installation's co-owner tag (CoOwnerTag).
	coOwner string
	filter  endpoint.DomainFilter
	ten     tenancy
	log     logrus.FieldLogger
	// gen counts the configurations applied: a Memory of an earlier one starts afresh.
	gen uint64
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
		cfg.Policy = plan.PolicySync
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if err := checkBrake(cfg.Brake); err != nil {
		return err
	}
	if cfg.SilentClusterAfter < 0 {
		return fmt.Errorf("silent-cluster threshold %s is negative", cfg.SilentClusterAfter)
	}
	r.cfg, r.clusterTag, r.ownerTags, r.filter, r.ten, r.log = cfg, clusterTag, ownerTags, domains, ten, cfg.Log
	r.coOwner = CoOwnerTag(cfg.ClusterName, cfg.ClusterID)
	r.gen++
	return nil
}

// Decision is everything the registry decided in one sync, each decision with its reason: the
// entries by owner, the endpoints the cluster is to have with the claims and parts of claims
// the claim stages refused, the plan, and what the change stages made of it.
type Decision struct {
	State *State
	// Desired holds the merged endpoint of every managed hostname; Conflicts the claims the
	// claim stages turned down and Problems the parts of claims they dropped, each with its
	// stage.
	Desired   []*endpoint.Endpoint
	Conflicts []Conflict
	Problems  []Problem
	// Plan is the plan's changes as it made them, before the change stages; Planned the
	// hostnames it looked at (the others were settled).
	Plan    []plan.Change
	Planned int
	// Verdict is what the change stages made of the plan: the writes to send, and the changes
	// held back with their reasons.
	Verdict
	// Unmanaged are the claims on hostnames outside the managed domains, which Decide sets
	// aside before it classifies, with no conflict and no Event; explain tells of them.
	Unmanaged []*endpoint.Endpoint
	// Now is the clock reading the sync decided by; Cluster and ClusterID the name and identity
	// it decided for, which the report and the Events carry.
	Now                time.Time
	Cluster, ClusterID string
}

// Given is what a caller hands Decide beside the entries and the claims: what it kept from
// earlier decisions, and what the entries are. The zero value is a sync that read the whole
// server and kept nothing, which the registry decides the same as any other.
type Given struct {
	// Memory is what earlier decisions left that makes a sync among thousands of unchanged
	// hostnames cheap, and what this process saw other writers do (memory.go).
	Memory *Memory
	// Read is what the records are; Rates the write-rate allowances earlier syncs left.
	Read  Read
	Rates Rates
	// Sync numbers the caller's syncs: every decision of one sync carries the same number,
	// and the first of the next closes it in the memory.
	Sync uint64
}

// Read says what the records handed to Decide are.
type Read struct {
	// Partial: they are the state known from earlier syncs, not a whole read of the server.
	// The hostnames Merges says are settled are left out of the plan, and what only a whole
	// read may send is held (the whole-read stage).
	Partial bool
	// Searched is the one hostname, lowercase, the caller read afresh beside the known state:
	// a create of it may go. SearchesLone: the caller searches the hostname of the plan's
	// creates when they are all of one, and decides again if the server has more of it than
	// was known, so such creates may go too.
	Searched     string
	SearchesLone bool
}

// Decide is one sync's decision at time now, from one read of the router's entries and the
// sources' endpoints (claims): it sorts the entries by owner (classify), runs the claim stages,
// plans, and runs the change stages. One clock reading decides both whose grace period has
// ended (a holder that let go) and which marks fall due. The memory is read before and told
// what the decision saw after (Memory.learn).
func (r *Registry) Decide(now time.Time, records []endpoint.Record, claims []*endpoint.Endpoint, g Given) Decision {
	m := g.Memory
	m.begin(r, &g, records, now)
	// The claims outside the managed domains (--domain-filter, --exclude-domains) are set
	// aside, as if the sources had not read them: as with external-dns, a filter is the user's
	// choice, which no Event repeats, and such a claim proves no entry this cluster's nor that
	// its object exists. This cluster's entries of such a hostname go as those no claim wants.
	claims, unmanaged := r.inDomains(claims)
	st := r.classify(records, claims, m.parser(r), m.writers())
	w := r.runClaimStages(claimStages[:], now, claims, st, m.mergeSource())
	toPlan, settled := w.Endpoints, m.settled(&w, st, g.Read)
	if len(settled) > 0 {
		toPlan = make([]*endpoint.Endpoint, 0, len(w.Endpoints)-len(settled))
		for _, ep := range w.Endpoints {
			if !settled[ep.Hostname] {
				toPlan = append(toPlan, ep)
			}
		}
	}
	changes := (&plan.Plan{Current: r.current(st, toPlan, settled, w.adopt), Desired: toPlan}).Calculate()
	in := &changesIn{now: now, st: st, desired: w.Endpoints, claims: claims, read: g.Read, rates: g.Rates}
	in.known, in.began = m.knownBeat(st, now)
	in.others = m.othersBeats(st, g.Read)
	v, problems := r.runChangeStages(changeStages[:], in, changes)
	m.learn(st, &w, changes, g.Read)
	return Decision{State: st, Desired: w.Endpoints, Conflicts: w.Conflicts, Problems: append(slices.Clip(w.Problems), problems...),
		Plan: changes, Planned: len(toPlan), Verdict: v, Unmanaged: unmanaged, Now: now, Cluster: r.cfg.ClusterName, ClusterID: r.cfg.ClusterID}
}
