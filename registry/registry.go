// Package registry owns the operator's ownership policy. Ownership lives only in tags on the
// router-hosts entries, so any replica, after any restart, reaches the same decisions from one
// ListHosts: which entries are ours, which belong to another cluster, which may be adopted, and
// when a pending deletion is due.
package registry

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// The ownership tags, exactly as they appear on entries.
const (
	TagOwner           = "k8s-operator"
	TagPreExisting     = "pre-existing:true"
	PrefixCluster      = "cluster:"
	PrefixSource       = "source:"
	PrefixNamespace    = "namespace:"
	PrefixKind         = "kind:"
	PrefixPending      = "pending-deletion:"
	PrefixGracePeriod  = "grace-period:"
	commentPrefix      = "router-hosts-operator: "
	preExistingPrefix  = "pre-existing:"
	defaultGracePeriod = 5 * time.Minute
)

// operatorTag reports whether t is a tag the operator writes for its own bookkeeping; releasing
// an adopted entry removes exactly these.
func operatorTag(t string) bool {
	if t == TagOwner {
		return true
	}
	for _, p := range []string{PrefixCluster, PrefixSource, PrefixNamespace, PrefixKind, PrefixPending, PrefixGracePeriod, preExistingPrefix} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// Config is the registry's policy.
type Config struct {
	// ClusterName scopes ownership so several clusters can share one router-hosts server.
	ClusterName string
	// DefaultTags are added to every entry the operator creates.
	DefaultTags []string
	// GracePeriod is how long a planned deletion waits, unless the entry carries its own.
	GracePeriod time.Duration
	// Policy is the plan policy; create-only also forbids adoption, which edits an entry.
	Policy plan.Policy
	Log    logrus.FieldLogger
}

// Registry applies ownership policy around the pure plan.
type Registry struct {
	cfg        Config
	clusterTag string
	log        logrus.FieldLogger
}

// New validates cfg and returns a Registry.
func New(cfg Config) (*Registry, error) {
	clusterTag := PrefixCluster + cfg.ClusterName
	if cfg.ClusterName == "" {
		return nil, fmt.Errorf("cluster name is empty")
	}
	if err := endpoint.ValidateTag(clusterTag); err != nil {
		return nil, fmt.Errorf("cluster name: %w", err)
	}
	for _, t := range cfg.DefaultTags {
		if err := endpoint.ValidateTag(t); err != nil {
			return nil, fmt.Errorf("default tag: %w", err)
		}
		if operatorTag(t) {
			return nil, fmt.Errorf("default tag %q collides with the operator's own tags", t)
		}
	}
	if cfg.GracePeriod < 0 {
		return nil, fmt.Errorf("grace period %s is negative", cfg.GracePeriod)
	}
	if cfg.Policy == "" {
		cfg.Policy = plan.Sync
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	return &Registry{cfg: cfg, clusterTag: clusterTag, log: cfg.Log}, nil
}

// State is the server's entries sorted by who owns them.
type State struct {
	// Owned entries carry k8s-operator and this cluster's tag.
	Owned []endpoint.Record
	// Foreign entries carry k8s-operator and another cluster's tag; they are never written.
	Foreign map[string][]endpoint.Record
	// Unowned entries lack k8s-operator; they may only be adopted.
	Unowned map[string][]endpoint.Record
	// Conflicts are the claims Desired turned down.
	Conflicts []Conflict
}

// Conflict is a claim on a hostname that lost to an older claim from another namespace, or to
// another cluster.
type Conflict struct {
	Hostname string
	Loser    endpoint.SourceRef
	// Winner names who holds the hostname: "namespace/name" of the older claim, or the other
	// cluster.
	Winner string
}

// ForeignCount is the number of entries owned by other clusters.
func (s *State) ForeignCount() int {
	n := 0
	for _, rs := range s.Foreign {
		n += len(rs)
	}
	return n
}

// Classify sorts the records of one ListHosts by owner.
func (r *Registry) Classify(records []endpoint.Record) *State {
	st := &State{Foreign: map[string][]endpoint.Record{}, Unowned: map[string][]endpoint.Record{}}
	for _, rec := range records {
		switch {
		case !rec.HasTag(TagOwner):
			st.Unowned[rec.Hostname] = append(st.Unowned[rec.Hostname], rec)
		case rec.HasTag(r.clusterTag):
			st.Owned = append(st.Owned, rec)
		default:
			st.Foreign[rec.Hostname] = append(st.Foreign[rec.Hostname], rec)
		}
	}
	return st
}

// Current turns owned entries into plan input: an adopted entry keeps its own tags.
func (r *Registry) Current(st *State) []plan.Current {
	out := make([]plan.Current, 0, len(st.Owned))
	for _, rec := range st.Owned {
		c := plan.Current{Record: rec}
		if rec.HasTag(TagPreExisting) {
			c.Adopted = true
			c.Keep = append(userTags(rec.Tags), TagPreExisting)
		}
		out = append(out, c)
	}
	return out
}

// userTags returns the tags of an entry that the operator did not write.
func userTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if !operatorTag(t) {
			out = append(out, t)
		}
	}
	return out
}

// Desired merges the sources' endpoints into one per hostname and adds the ownership tags,
// default tags and provenance comment. Claims on one hostname from one namespace merge; across
// namespaces the oldest claim wins so that one tenant cannot take over another's hostname. A
// hostname held by another cluster is left to it.
func (r *Registry) Desired(eps []*endpoint.Endpoint, st *State) []*endpoint.Endpoint {
	byHost := map[string][]*endpoint.Endpoint{}
	for _, ep := range eps {
		byHost[ep.Hostname] = append(byHost[ep.Hostname], ep)
	}
	owned := map[string]bool{}
	for _, rec := range st.Owned {
		owned[rec.Hostname] = true
	}
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	out := make([]*endpoint.Endpoint, 0, len(hosts))
	for _, h := range hosts {
		if len(st.Foreign[h]) > 0 && !owned[h] {
			r.log.WithFields(logrus.Fields{"hostname": h, "owner": clusterOf(st.Foreign[h][0])}).
				Warn("hostname is managed by another cluster; not writing it")
			for _, c := range byHost[h] {
				st.Conflicts = append(st.Conflicts, Conflict{Hostname: h, Loser: c.Sources[0], Winner: "cluster " + clusterOf(st.Foreign[h][0])})
			}
			continue
		}
		out = append(out, r.merge(h, byHost[h], st))
	}
	return out
}

func clusterOf(rec endpoint.Record) string {
	v, _ := rec.TagValue(PrefixCluster)
	return v
}

// merge combines the claims on one hostname into the endpoint the plan sees.
func (r *Registry) merge(host string, claims []*endpoint.Endpoint, st *State) *endpoint.Endpoint {
	sort.SliceStable(claims, func(i, j int) bool { return olderClaim(claims[i], claims[j]) })
	winner := claims[0].Sources[0].Namespace
	m := &endpoint.Endpoint{Hostname: host}
	var targets, aliases, tags []string
	kinds := map[string]bool{}
	for _, c := range claims {
		src := c.Sources[0]
		if src.Namespace != winner {
			r.log.WithFields(logrus.Fields{"hostname": host, "namespace": src.Namespace, "name": src.Name, "kind": src.Kind, "owner_namespace": winner}).
				Warn("hostname is already claimed by an older object in another namespace; ignoring this claim")
			st.Conflicts = append(st.Conflicts, Conflict{Hostname: host, Loser: src, Winner: winner + "/" + claims[0].Sources[0].Name})
			continue
		}
		targets = append(targets, c.Targets...)
		aliases = append(aliases, c.Aliases...)
		tags = append(tags, c.Tags...)
		m.Sources = append(m.Sources, c.Sources...)
		if c.GracePeriod != nil && (m.GracePeriod == nil || *c.GracePeriod > *m.GracePeriod) {
			// The longest grace period among the claims is the safe one.
			g := *c.GracePeriod
			m.GracePeriod = &g
		}
		for _, s := range c.Sources {
			kinds[s.Kind] = true
		}
	}
	m.Targets = endpoint.SortedUnique(targets)
	m.Aliases = endpoint.SortedUnique(aliases)
	if len(m.Aliases) > endpoint.MaxAliases {
		m.Aliases = m.Aliases[:endpoint.MaxAliases]
	}
	m.Tags = endpoint.SortedUnique(append(tags, r.cfg.DefaultTags...))
	owner := []string{TagOwner, r.clusterTag, PrefixNamespace + winner}
	for _, s := range m.Sources {
		owner = append(owner, PrefixSource+s.UID)
	}
	for k := range kinds {
		owner = append(owner, PrefixKind+k)
	}
	if m.GracePeriod != nil {
		owner = append(owner, PrefixGracePeriod+strconv.FormatInt(int64(m.GracePeriod.Seconds()), 10))
	}
	m.OwnerTags = endpoint.SortedUnique(owner)
	m.Comment = commentPrefix + m.Sources[0].String()
	if len(m.Sources) > 1 {
		m.Comment += fmt.Sprintf(" (+%d more)", len(m.Sources)-1)
	}
	return m
}

// olderClaim orders claims by their oldest source: creation time, then UID.
func olderClaim(a, b *endpoint.Endpoint) bool {
	sa, sb := a.Sources[0], b.Sources[0]
	if !sa.CreationTimestamp.Equal(sb.CreationTimestamp) {
		return sa.CreationTimestamp.Before(sb.CreationTimestamp)
	}
	return sa.UID < sb.UID
}
