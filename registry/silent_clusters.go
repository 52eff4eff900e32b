package registry

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// SilentCluster is another installation whose newest heartbeat is overdue by its own threshold.
type SilentCluster struct {
	Cluster, ClusterID string        // as its tags name it
	Entries            int           // on the router
	LastSeen           time.Time     // its newest mark
	Interval           time.Duration // the --interval the mark carries (zero: none)
}

// silentClusters reports, holding nothing, the other installations whose newest mark is older
// than four renewal periods it carries (none: the reader's threshold), as others may renew slower.
func (r *Registry) silentClusters(in *changesIn, changes []plan.Change) changed {
	if r.cfg.SilentClusterAfter <= 0 {
		return changed{changes: changes}
	}
	var out []SilentCluster
	for _, s := range in.others {
		t, err := time.Parse(time.RFC3339, s.newest)
		after := r.cfg.SilentClusterAfter
		if every := duration(s.settings.every); every > 0 && mutation != "silent-by-reader" {
			after = every * beatQuarter
		}
		if err == nil && in.now.Sub(t) > after {
			out = append(out, SilentCluster{Cluster: s.cluster, ClusterID: s.id, Entries: s.entries, LastSeen: t,
				Interval: duration(s.settings.interval)})
		}
	}
	slices.SortFunc(out, func(a, b SilentCluster) int {
		return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.ClusterID, b.ClusterID))
	})
	return changed{changes: changes, silent: out}
}

// ReleaseCommand is the command that lets s go, with a probe wait its interval answers in.
func (s *SilentCluster) ReleaseCommand() string {
	cmd := "router-hosts-operator release --cluster-name=" + s.Cluster
	if s.ClusterID != "" {
		cmd += " --cluster-id=" + s.ClusterID
	}
	if s.Interval > 0 {
		cmd += " --probe-wait=" + MinProbeWait(s.Interval).String()
	}
	return cmd
}

// MinProbeWait is the least wait for a probe's answer: 2.5 intervals, so that one sync may fail.
func MinProbeWait(interval time.Duration) time.Duration {
	return interval * 5 / 2
}
