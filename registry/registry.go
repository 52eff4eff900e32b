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
	// ClusterID is the installation's identity (Identity), in a tag of its own on every entry,
	// so that a namesake's entries are never taken for this cluster's and a rename keeps them.
	// Empty: ownership by name alone (the external-dns webhook's).
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
	// HostnameUIDs: the source: UIDs of the claims are hashed from their hostnames (the
	// external-dns webhook's), the same in every installation, so they prove no entry ours.
	HostnameUIDs bool
	// SilentClusterAfter is how old another installation's newest heartbeat may grow before
	// it is reported silent; this one renews its own every quarter of it. Zero: neither.
	SilentClusterAfter time.Duration
	// Interval is how often a full sync runs; the heartbeat carries it for release's probe.
	Interval time.Duration
	// CompactOwnEntries: the event logs of the entries this installation alone owns are folded
	// once they pass CompactAbove events (0: DefaultCompactAbove), and those of the entries it
	// deleted once a whole read no longer shows them (compact.go).
	CompactOwnEntries bool
	CompactAbove      int
	Log               logrus.FieldLogger
}

// Registry applies ownership policy around the pure plan. It keeps no state between calls:
// what a sync reuses from the last is the caller's Memory, so every decision is a function of
// the entries, the claims, the settings and the time.
type Registry struct {
	cfg        Config
	clusterTag string
	// ownerTags are on every entry of this cluster: k8s-operator, its name and its identity;
	// coOwner is its co-owner tag (CoOwnerTag).
	ownerTags []string
	coOwner   string
	filter    endpoint.DomainFilter
	ten       tenancy
	log       logrus.FieldLogger
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
	if cfg.CompactAbove < 0 {
		return fmt.Errorf("compaction threshold %d is negative", cfg.CompactAbove)
	}
	if cfg.SilentClusterAfter < 0 {
		return fmt.Errorf("silent-cluster threshold %s is negative", cfg.SilentClusterAfter)
	}
	r.cfg, r.clusterTag, r.ownerTags, r.filter, r.ten, r.log = cfg, clusterTag, ownerTags, domains, ten, cfg.Log
	r.coOwner = CoOwnerTag(cfg.ClusterName, cfg.ClusterID)
	r.gen++
	return nil
}

// Decision is everything the registry decided in one sync, each with its reason: the entries
// by owner, the endpoints wanted and what the claim stages refused, the plan, and the verdict.
type Decision struct {
	State *State
	// Desired holds the merged endpoint of every hostname; Conflicts the claims turned down
	// and Problems the parts of claims dropped, each with its stage.
	Desired   []*endpoint.Endpoint
	Conflicts []Conflict
	Problems  []Problem
	// Plan is the plan's changes before the change stages; Planned the hostnames it looked at.
	Plan    []plan.Change
	Planned int
	Verdict
	// Unmanaged are the claims on hostnames outside the managed domains, which Decide sets
	// aside before it classifies, with no conflict and no Event; explain tells of them.
	Unmanaged []*endpoint.Endpoint
	// Now is the clock reading it decided by; Cluster and ClusterID whom it decided for.
	Now                time.Time
	Cluster, ClusterID string
}

// Given is what a caller hands Decide beside the entries and the claims. The zero value is a
// sync that read the whole server and kept nothing, which decides the same as any other.
type Given struct {
	// Memory is what earlier decisions left (memory.go).
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
	// Partial: they are the state known from earlier syncs, not a whole read: settled
	// hostnames are left out of the plan, and what only a whole read may send is held.
	Partial bool
	// Searched is the hostname, lowercase, read afresh beside the known state: a create of it
	// may go. SearchesLone: the caller searches the one hostname of the plan's creates and
	// decides again if the server has more of it, so such creates may go too.
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
	in.folds = m.foldsOf()
	v, problems := r.runChangeStages(changeStages[:], in, changes)
	m.learn(st, &w, changes, g.Read)
	return Decision{State: st, Desired: w.Endpoints, Conflicts: w.Conflicts, Problems: append(slices.Clip(w.Problems), problems...),
		Plan: changes, Planned: len(toPlan), Verdict: v, Unmanaged: unmanaged, Now: now, Cluster: r.cfg.ClusterName, ClusterID: r.cfg.ClusterID}
}
