package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/metrics"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// CommandRelease lets a cluster go (Release).
const CommandRelease = "release"

// DefaultProbeWait is --probe-wait's default: two and a half of the operator's default
// --interval (1m), so that a running operator has had a full sync even if one of them failed.
const DefaultProbeWait = 150 * time.Second

// releaseFlags completes the release command's flags. The cluster may be gone, and its
// RouterHostsConfig with it, so the connection is the flags' alone; and the cluster is named
// on purpose, never by the default name.
func (cfg *Config) releaseFlags(nameGiven bool) error {
	cfg.ConfigName = ""
	switch {
	case !nameGiven:
		return errors.New("release: --cluster-name is required: it names the cluster whose entries leave the router")
	case cfg.Provider == "inmemory":
		return errors.New("release: --provider=inmemory holds no cluster's entries; name the router with --router-hosts-endpoint")
	case cfg.ProbeWait <= 0:
		return errors.New("--probe-wait must be positive")
	}
	return nil
}

// StillRunsError refuses a release: something wrote the probed entry during the wait, which is
// what a running operator of the cluster does at its next sync. Releasing then would only
// start a tug of war with it.
type StillRunsError struct {
	Cluster string
	// Did says what happened to the probed entry, e.g. "took the probe off entry ID (host)".
	Did    string
	Within time.Duration
}

func (e *StillRunsError) Error() string {
	return fmt.Sprintf("the operator of cluster %s still runs: it %s within %s; stop it (helm uninstall / scale to 0) and run release again",
		e.Cluster, e.Did, e.Within)
}

// ShortWaitError refuses a release whose probe wait is shorter than the cluster's own marks of
// life say its operator may take to answer: a running operator would not be seen, and lose its
// entries.
type ShortWaitError struct {
	Cluster        string
	Interval, Wait time.Duration
}

func (e *ShortWaitError) Error() string {
	return fmt.Sprintf("release of cluster %s refused: its heartbeat says its operator syncs every %s, so it may take longer than --probe-wait=%s "+
		"to answer the probe; run release again with --probe-wait=%s or longer", e.Cluster, e.Interval, e.Wait, registry.MinProbeWait(e.Interval))
}

// CannotKnowError refuses a release that the probe cannot vouch for: no running operator of the
// cluster would be seen (Why), so a release could start a tug of war nobody notices. --force
// lets it go ahead.
type CannotKnowError struct {
	Cluster, Why string
}

func (e *CannotKnowError) Error() string {
	return fmt.Sprintf("release of cluster %s refused: the probe cannot tell whether its operator still runs: %s", e.Cluster, e.Why)
}

// Release lets the cluster cfg names go: its adopted entries are given back as the user had
// them, the ones it created are deleted, and nothing else on the router is touched (the
// registry's Release decides which and how). With --dry-run it prints the plan and writes
// nothing. Otherwise it first makes sure no operator of the cluster still runs, since one
// would put everything back: it writes a probe tag on one of the entries, waits --probe-wait
// on clk (nil: the real clock), and reads the server again. A running operator owns the
// entry, so its next sync rewrites it as it wants it, without the probe; if the entry is
// exactly as the probe left it, the release goes ahead from that fresh read, else it is
// refused (a *StillRunsError). Plan lines and the summary go to out.
func Release(ctx context.Context, cfg *Config, log *logrus.Logger, out io.Writer, clk clock.Clock) error {
	if clk == nil {
		clk = clock.RealClock{}
	}
	reg, err := registry.New(registry.Config{ClusterName: cfg.ClusterName, ClusterID: cfg.ClusterID, Log: log.WithField("component", "registry")})
	if err != nil {
		return fmt.Errorf("--cluster-name/--cluster-id: %w", err)
	}
	prov, closeProv, err := newProvider(cfg, cfg.settings(), false, nil, log, metrics.New(nil))
	if err != nil {
		return err
	}
	defer closeProv()

	records, err := prov.Records(ctx)
	if err != nil {
		return fmt.Errorf("listing router-hosts entries: %w", err)
	}
	letting, err := reg.Release(records)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	cluster := "cluster " + cfg.ClusterName
	if letting.ClusterID != "" {
		cluster += " (cluster-id " + letting.ClusterID + ")"
	}
	fields := logrus.Fields{"cluster": cfg.ClusterName}
	if letting.ClusterID != "" {
		fields["cluster_id"] = letting.ClusterID
	}
	printStaying(out, cfg.ClusterName, letting)
	if cfg.DryRun {
		for i := range letting.Changes {
			fmt.Fprintln(out, letting.Changes[i].String())
		}
		if p := letting.Probe(clk.Now()); p != nil {
			log.WithFields(fields).WithFields(logrus.Fields{"id": p.Old.ID, "hostname": p.Old.Hostname}).
				Info("dry run: the release probe would go on this entry; nothing is written")
		}
		n := map[plan.Action]int{}
		for _, c := range letting.Changes {
			n[c.Action]++
		}
		fmt.Fprintf(out, "dry run: %s: %d released, %d deleted%s; nothing written\n", cluster, n[plan.Release], n[plan.Delete],
			sharedSummary(n[registry.ActionHandOver], n[registry.ActionWithdraw]))
		return nil
	}
	if len(letting.Changes) == 0 {
		fmt.Fprintf(out, "%s: no entries to release\n", cluster)
		return nil
	}
	if cfg.ProbeWait < registry.MinProbeWait(letting.Interval) {
		return &ShortWaitError{Cluster: cfg.ClusterName, Interval: letting.Interval, Wait: cfg.ProbeWait}
	}
	if why := letting.Unknowable(); why != "" {
		if !cfg.Force {
			return &CannotKnowError{Cluster: cfg.ClusterName, Why: why}
		}
		log.WithFields(fields).WithField("why", why).Warn("--force: releasing though the probe cannot tell whether an operator of the cluster runs")
	}

	// The probe: one write, then one read after the wait.
	probe := []plan.Change{*letting.Probe(clk.Now())}
	probed := prov.ApplyChanges(ctx, probe)
	if err := plan.ErrorOf(probed); err != nil {
		return fmt.Errorf("writing the release probe on entry %s (%s): %w", probe[0].Old.ID, probe[0].Old.Hostname, err)
	}
	written := probed[0].Stored
	stamp := registry.Probed(written)
	log.WithFields(fields).WithFields(logrus.Fields{"id": written.ID, "hostname": written.Hostname, "probe": stamp, "wait": cfg.ProbeWait}).
		Info("release probe written; a running operator of the cluster would take it off at its next sync")
	select {
	case <-clk.After(cfg.ProbeWait):
	case <-ctx.Done():
		return fmt.Errorf("interrupted while waiting on the probe; nothing was released, and entry %s keeps the probe until a release or the cluster's operator rewrites it: %w",
			written.ID, ctx.Err())
	}
	fresh, err := prov.Records(ctx)
	if err != nil {
		return fmt.Errorf("listing router-hosts entries after the probe: %w", err)
	}
	if did := probeAnswered(written, stamp, fresh); did != "" {
		return &StillRunsError{Cluster: cfg.ClusterName, Did: did, Within: cfg.ProbeWait}
	}
	again, err := reg.Release(fresh)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if again.ClusterID != letting.ClusterID {
		return &StillRunsError{Cluster: cfg.ClusterName, Within: cfg.ProbeWait,
			Did: fmt.Sprintf("changed the identity on the cluster's entries from %s to %s", orNone(letting.ClusterID), orNone(again.ClusterID))}
	}
	log.WithFields(fields).Info("the probe is untouched: no operator of the cluster runs; releasing")

	// An interruption leaves the changes not started unwritten: they are counted with the
	// failures, and the summary says what was written.
	changes := again.Changes
	results := prov.ApplyChanges(ctx, changes)
	if stale := staleEntries(changes, results); len(stale) > 0 {
		changes, results = decideAgain(ctx, prov, cfg.ClusterName, again.ClusterID, stale, changes, results, log.WithFields(fields), out)
	}
	released, deleted, handed, withdrawn := 0, 0, 0, 0
	for i := range changes {
		c := &changes[i]
		if ce := results[i].Err; ce != nil {
			if !errors.Is(ce.Err, plan.ErrNotStarted) {
				log.WithFields(fields).WithError(ce.Err).WithField("change", c.String()).Error("not released")
			}
			continue
		}
		fmt.Fprintln(out, c.String())
		switch c.Action {
		case plan.Release:
			released++
		case registry.ActionHandOver:
			handed++
		case registry.ActionWithdraw:
			withdrawn++
		default:
			deleted++
		}
	}
	fmt.Fprintf(out, "%s: %d released, %d deleted%s\n", cluster, released, deleted, sharedSummary(handed, withdrawn))
	if applyErr := plan.ErrorOf(results); applyErr != nil {
		return fmt.Errorf("releasing %s: %d of %d changes not written (run release again for the rest): %w",
			cluster, len(changes)-released-deleted-handed-withdrawn, len(changes), applyErr)
	}
	return nil
}

// staleEntries are the IDs of the entries whose writes the server refused as stale: each
// changed since the read the release decided on.
func staleEntries(changes []plan.Change, results []plan.Result) map[string]bool {
	stale := map[string]bool{}
	for i := range results {
		if ce := results[i].Err; ce != nil && ce.Stale && changes[i].Old != nil {
			stale[changes[i].Old.ID] = true
		}
	}
	return stale
}

// decideAgain reads the server once more and lets the registry decide again on the stale
// entries, under the identity being released, since a change planned on the old read may no
// longer apply: what it still releases is sent at the version now read, and an entry it no
// longer lets go (it changed hands) stays as it is, said in a left line (one gone meanwhile
// needs no word). A read or a decision that fails keeps the stale failures for the caller to
// report. It returns the changes and results with the stale entries' replaced.
func decideAgain(ctx context.Context, prov *routerhosts.Provider, cluster, clusterID string, stale map[string]bool,
	changes []plan.Change, results []plan.Result, log logrus.FieldLogger, out io.Writer) ([]plan.Change, []plan.Result) {
	fresh, err := prov.Records(ctx)
	if err != nil {
		log.WithError(err).Warn("listing router-hosts entries again after a version conflict")
		return changes, results
	}
	guard, err := registry.New(registry.Config{ClusterName: cluster, ClusterID: clusterID})
	var letting *registry.Letting
	if err == nil {
		letting, err = guard.Release(fresh)
	}
	if err != nil {
		log.WithError(err).Warn("deciding again on the entries changed since they were read")
		return changes, results
	}
	present := map[string]bool{}
	for i := range fresh {
		present[fresh[i].ID] = true
	}
	var redo []plan.Change
	for _, c := range letting.Changes {
		if c.Old != nil && stale[c.Old.ID] {
			redo = append(redo, c)
			delete(stale, c.Old.ID)
		}
	}
	keptChanges, keptResults := changes[:0:0], results[:0:0]
	for i := range changes {
		c := &changes[i]
		if ce := results[i].Err; ce == nil || !ce.Stale || c.Old == nil {
			keptChanges, keptResults = append(keptChanges, *c), append(keptResults, results[i])
			continue
		}
		if stale[c.Old.ID] && present[c.Old.ID] {
			fmt.Fprintf(out, "left    %s %s id=%s (changed since it was read, and no longer the cluster's to release)\n", c.Old.Hostname, c.Old.IP, c.Old.ID)
			log.WithFields(logrus.Fields{"id": c.Old.ID, "hostname": c.Old.Hostname}).Warn("entry changed hands since it was read; left as it is")
		}
	}
	return append(keptChanges, redo...), append(keptResults, prov.ApplyChanges(ctx, redo)...)
}

// probeAnswered says what became of the probed entry during the wait, as the probe wrote it
// (written, carrying stamp), in fresh: "" when it is exactly as the probe left it.
func probeAnswered(written *endpoint.Record, stamp string, fresh []endpoint.Record) string {
	entry := fmt.Sprintf("entry %s (%s)", written.ID, written.Hostname)
	i := slices.IndexFunc(fresh, func(r endpoint.Record) bool { return r.ID == written.ID })
	switch {
	case i < 0:
		return "deleted " + entry
	case registry.Probed(&fresh[i]) != stamp:
		return "took the probe off " + entry
	case written.Version != "" && fresh[i].Version != written.Version,
		endpoint.Diff(written, &fresh[i]) != 0, !slices.Equal(written.Tags, fresh[i].Tags):
		return "rewrote " + entry
	}
	return ""
}

func orNone(id string) string {
	if id == "" {
		return "none"
	}
	return id
}

// printStaying tells what may be the cluster's and stays on the router: an earlier version's
// entries that may be another installation's, and that installation; and the identity's
// entries under another name, which release under that name lets go.
func printStaying(out io.Writer, name string, l *registry.Letting) {
	for i := range l.Left {
		r := &l.Left[i]
		fmt.Fprintf(out, "left    %s %s id=%s (an earlier version's, without an identity: another installation writes cluster %s, and it may be its)\n",
			r.Hostname, r.IP, r.ID, name)
	}
	for i := range l.Renamed {
		r := &l.Renamed[i]
		other := strings.Join(registry.ClusterNames(r), ",")
		fmt.Fprintf(out, "left    %s %s id=%s (cluster-id %s under cluster %s: a rename's, or another installation's sharing the identity; release --cluster-name=%s lets it go)\n",
			r.Hostname, r.IP, r.ID, l.ClusterID, other, other)
	}
	if len(l.Namesakes) > 0 {
		ids := make([]string, len(l.Namesakes))
		for i, n := range l.Namesakes {
			ids[i] = fmt.Sprintf("cluster-id %s (%d entries)", n.ID, n.Entries)
		}
		fmt.Fprintf(out, "other installations write cluster %s and keep their entries: %s\n", name, strings.Join(ids, ", "))
	}
}

// sharedSummary is what release did to shared lines, for its summary line: "" when nothing.
func sharedSummary(handed, withdrawn int) string {
	out := ""
	if handed > 0 {
		out += fmt.Sprintf(", %d handed over to a cluster that shares them", handed)
	}
	if withdrawn > 0 {
		out += fmt.Sprintf(", %d other clusters' lines no longer co-owned", withdrawn)
	}
	return out
}
