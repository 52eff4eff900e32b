package registry

import (
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Marks of life. A cluster that is gone for good leaves its entries on the router, and nobody
// is told. So each installation keeps a mark of life (PrefixAlive and the time) on one entry of
// its own, the created one with the lowest ID that is not on its way out (its carrier), and
// renews it once the newest of its marks is a quarter of the silent-cluster threshold old: at
// the default of seven days, one UpdateHost every 42 hours. Every installation reads the
// others' marks in the read it makes anyway, and reports those whose newest mark is older than
// the threshold (Silent). Nothing is deleted for it: `release` is a person's decision.
//
// An installation that never wrote a mark (a version before marks, or one that writes under
// --policy=create-only, or holds only adopted entries) is never reported silent.

// lifeQuarter is the share of the threshold after which a mark is renewed.
const lifeQuarter = 4

// Life is what one read's entries say of the marks of life. The marks are RFC 3339 times in
// UTC, which sort as text, so a read compares them without parsing each.
type Life struct {
	// newest is the newest mark on this installation's entries, "" when none carries one.
	newest string
	// carrier is the ID of the entry that carries the mark, carrierHost its lowercase hostname.
	carrier, carrierHost string
	// others are the other installations' entries and newest marks, by identity (by cluster
	// name for entries without one).
	others map[string]*lifeSeen
}

// lifeSeen is what the entries of another installation say of it.
type lifeSeen struct {
	cluster, id string
	entries     int
	newest      string
}

// own takes one of this installation's entries, v its tags.
func (l *Life) own(rec *endpoint.Record, v *view) {
	if m, ok := v.value(PrefixAlive); ok && m > l.newest {
		l.newest = m
	}
	if _, marked := v.value(PrefixPending); !marked && !v.has(TagPreExisting) && (l.carrier == "" || rec.ID < l.carrier) {
		l.carrier, l.carrierHost = rec.ID, strings.ToLower(rec.Hostname)
	}
}

// other takes one entry of another installation, v its tags.
func (l *Life) other(v *view) {
	id, _ := v.clusterID()
	name := ""
	if names := v.clusterNames(); len(names) > 0 {
		name = names[0]
	}
	key := id
	if key == "" {
		key = PrefixCluster + name
	}
	if l.others == nil {
		l.others = map[string]*lifeSeen{}
	}
	s := l.others[key]
	if s == nil {
		s = &lifeSeen{cluster: name, id: id}
		l.others[key] = s
	}
	s.entries++
	if m, ok := v.value(PrefixAlive); ok && m > s.newest {
		s.newest = m
	}
}

// renewal is the mark of life a sync at now writes: the ID of the entry that carries it and
// the tag; no tag when none is due (the newest mark is younger than a quarter of the
// threshold, or marks are off), and no ID when the installation has no entry to carry it yet:
// then the mark goes on the sync's first create (withMark), so that a new installation's first
// sync writes it with no write of its own.
func (r *Registry) renewal(now time.Time, st *State) (id, tag string) {
	l := &st.Life
	if r.cfg.SilentClusterAfter <= 0 {
		return "", ""
	}
	if t, err := time.Parse(time.RFC3339, l.newest); err == nil && now.Sub(t) < r.cfg.SilentClusterAfter/lifeQuarter {
		return "", ""
	}
	return l.carrier, PrefixAlive + now.UTC().Format(time.RFC3339)
}

// withMark is changes with the mark tag on the first create, when there is one; the create is
// a copy.
func withMark(changes []plan.Change, tag string) []plan.Change {
	for i := range changes {
		if c := &changes[i]; c.Action == plan.Create {
			out := slices.Clone(changes)
			n := *c.New
			n.Tags = append(slices.Clone(c.New.Tags), tag)
			out[i].New = &n
			return out
		}
	}
	return changes
}

// SilentCluster is another installation whose newest mark of life is older than the threshold.
type SilentCluster struct {
	// Cluster and ClusterID name it as its tags do; Entries counts its entries on the router.
	Cluster, ClusterID string
	Entries            int
	// LastSeen is its newest mark.
	LastSeen time.Time
}

// Silent are the other installations of st whose newest mark of life is older than the
// threshold at now, sorted by name and identity; none when marks are off.
func (r *Registry) Silent(now time.Time, st *State) []SilentCluster {
	if r.cfg.SilentClusterAfter <= 0 {
		return nil
	}
	var out []SilentCluster
	for _, s := range st.Life.others {
		t, err := time.Parse(time.RFC3339, s.newest)
		if err != nil || now.Sub(t) <= r.cfg.SilentClusterAfter {
			continue
		}
		out = append(out, SilentCluster{Cluster: s.cluster, ClusterID: s.id, Entries: s.entries, LastSeen: t})
	}
	slices.SortFunc(out, func(a, b SilentCluster) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		return strings.Compare(a.ClusterID, b.ClusterID)
	})
	return out
}

// ReleaseCommand is the command that lets s go.
func (s *SilentCluster) ReleaseCommand() string {
	cmd := "router-hosts-operator release --cluster-name=" + s.Cluster
	if s.ClusterID != "" {
		cmd += " --cluster-id=" + s.ClusterID
	}
	return cmd
}
