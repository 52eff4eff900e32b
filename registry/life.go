package registry

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Marks of life. A cluster that is gone for good leaves its entries on the router, and nobody
// is told. So each installation keeps a mark of life (PrefixAlive and the time) on its entries,
// and renews it once the newest of its marks is a quarter of the silent-cluster threshold old:
// at the default of seven days, at most one UpdateHost every 42 hours. A renewal rides on a
// write the sync makes anyway (a create, an update of its own entry); with none, it is a write
// of its own on its carrier, the created entry with the lowest ID not on its way out. Every
// installation reads the others' marks in the read it makes anyway, and reports those whose
// newest mark is older than the threshold (Silent). Nothing is deleted for it: `release` is a
// person's decision.
//
// An installation that never wrote a mark (a version before marks, or one that writes under
// --policy=create-only, or holds only adopted entries) is never reported silent.

// lifeQuarter is the share of the threshold after which a mark is renewed.
const lifeQuarter = 4

// Life is what one read's entries say of the marks of life. The marks are RFC 3339 times in
// UTC, which sort as text, so a read compares them without parsing each.
type Life struct {
	// newest is the newest mark on this installation's entries that stay, "" when none carries
	// one, and settings the renewal period and interval written beside it; leaving the newest
	// on its entries on their way out.
	newest, leaving string
	settings        markSettings
	// carrier is the ID of the entry a renewal of its own goes on.
	carrier string
	// others are the other installations' entries and newest marks, by identity (by cluster
	// name for entries without one).
	others map[string]*lifeSeen
}

// lifeSeen is what the entries of another installation say of it.
type lifeSeen struct {
	cluster, id string
	entries     int
	newest      string
	settings    markSettings
}

// markSettings are the values a mark of life carries beside its time, as written: its
// renewal period and the installation's interval, in seconds ("" for a mark without them).
type markSettings struct{ every, interval string }

func markSettingsOf(v *view) markSettings {
	every, _ := v.value(PrefixAliveEvery)
	interval, _ := v.value(PrefixAliveInterval)
	return markSettings{every: every, interval: interval}
}

// settingsOf are the values the marks of this installation carry with cfg.
func settingsOf(cfg *Config) markSettings {
	m := markSettings{every: seconds(cfg.SilentClusterAfter / lifeQuarter)}
	if cfg.Interval > 0 {
		m.interval = seconds(cfg.Interval)
	}
	return m
}

// markPeriod is markPeriod of this installation's own marks: how long after one it writes
// again; zero when it writes none.
func (r *Registry) markPeriod() time.Duration {
	if r.cfg.SilentClusterAfter <= 0 {
		return 0
	}
	return r.cfg.SilentClusterAfter/lifeQuarter + 2*r.cfg.Interval
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// duration reads a value in seconds; zero when it is not one.
func duration(s string) time.Duration {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > int64(maxLifeSeconds) {
		return 0
	}
	return time.Duration(n) * time.Second
}

// maxLifeSeconds bounds what a mark may claim, so that a forged value overflows nothing.
const maxLifeSeconds = 100 * 365 * 24 * 3600

// tags are the tags of a mark written at now.
func (m markSettings) tags(now time.Time) []string {
	out := []string{PrefixAlive + now.UTC().Format(time.RFC3339), PrefixAliveEvery + m.every}
	if m.interval != "" {
		out = append(out, PrefixAliveInterval+m.interval)
	}
	return out
}

// own takes one of this installation's entries, v its tags.
// A mark on an entry on its way out leaves with it: it is kept apart (leaving), so that when
// older marks stay, the newest of those is what the others will read, and is renewed when due.
func (l *Life) own(rec *endpoint.Record, v *view) {
	_, leaving := v.value(PrefixPending)
	if m, ok := v.value(PrefixAlive); ok && leaving && m > l.leaving {
		l.leaving = m
	}
	if m, ok := v.value(PrefixAlive); ok && m > l.newest && !leaving {
		l.newest, l.settings = m, markSettingsOf(v)
	}
	if !leaving && !v.has(TagPreExisting) && (l.carrier == "" || rec.ID < l.carrier) {
		l.carrier = rec.ID
	}
}

// other takes one entry of another installation, v its tags.
func (l *Life) other(v *view) {
	// As clusterID and clusterNames read them, without building their lists: this runs for
	// every other cluster's entry at every sync.
	raw, _ := v.value(PrefixCluster)
	name, id := splitCluster(raw)
	if cid, ok := v.value(PrefixClusterID); ok {
		id = cid
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
		s.newest, s.settings = m, markSettingsOf(v)
	}
}

// withMark is changes with the mark of life renewed when it is due at now: when no mark of
// this installation is known (on the router, or written or read by this process: known), the
// newest is a quarter of the threshold old, or the newest read carries other settings than
// these (others would read it against a renewal period no longer kept). The mark rides on the sync's first create or
// update of an entry of this installation when it has one; else it is a write of its own on
// the carrier. A process that never knew a mark of its own (a mark lost with its entry, then a
// restart) waits a quarter of the threshold from began, its first decision, before it writes
// one of its own, so that a restart adds no write a sync would not make anyway; began is empty
// once it has known one. The changes it rides on are copies.
func (r *Registry) withMark(now time.Time, st *State, known, began string, changes []plan.Change) []plan.Change {
	quarter := r.cfg.SilentClusterAfter / lifeQuarter
	if quarter <= 0 || r.cfg.Policy.Forbids(plan.Update) {
		// Under create-only no mark could be renewed: none is written.
		return changes
	}
	// The others read the newest mark on the router. While one stays, the newest that stays
	// is what they will read once the entries leaving are gone: it must be renewed when due,
	// even if this process wrote a newer one on an entry now leaving or gone. With none
	// staying, they read the newest leaving until it goes, however old. With none at all
	// they read no mark, which is never silence: the renewal waits for the newest known.
	newest := st.Life.newest
	if newest == "" {
		newest = st.Life.leaving
	}
	if newest == "" {
		newest = known
	}
	settings := settingsOf(&r.cfg)
	stale := st.Life.newest != "" && st.Life.newest >= known && st.Life.settings != settings
	if t, err := time.Parse(time.RFC3339, newest); err == nil && now.Sub(t) < quarter && !stale {
		return changes
	}
	tags := settings.tags(now)
	owned := func(id string) bool {
		return slices.ContainsFunc(st.Owned, func(rec endpoint.Record) bool { return rec.ID == id })
	}
	for i := range changes {
		// Only an entry this installation owns carries its mark: one it co-owns under a former
		// name is another's line to the others, which would never read the mark there.
		if c := &changes[i]; r.carries(c) && (c.Old == nil || owned(c.Old.ID)) {
			out := slices.Clone(changes)
			n := *c.New
			n.Tags = endpoint.SortedUnique(append(slices.DeleteFunc(slices.Clone(c.New.Tags), isAlive), tags...))
			out[i].New = &n
			return out
		}
	}
	if st.Life.carrier == "" {
		return changes
	}
	if t, err := time.Parse(time.RFC3339, began); newest == "" && err == nil && now.Sub(t) < quarter {
		return changes
	}
	for i := range changes {
		if changes[i].Old != nil && changes[i].Old.ID == st.Life.carrier {
			return changes // the carrier is written or leaves: the next sync renews
		}
	}
	for i := range st.Owned {
		if rec := &st.Owned[i]; rec.ID == st.Life.carrier {
			n := *rec
			n.Tags = append(slices.DeleteFunc(slices.Clone(rec.Tags), isAlive), tags...)
			return append(changes[:len(changes):len(changes)], plan.Change{Action: plan.Update, Old: rec, New: &n})
		}
	}
	return changes
}

// carries reports whether c writes an entry of this installation the operator created, which
// may take the mark along: a create, or an update that is no mark, release or co-owner's write.
func (r *Registry) carries(c *plan.Change) bool {
	if (c.Action != plan.Create && c.Action != plan.Update) || c.New == nil || c.New.HasTag(TagPreExisting) {
		return false
	}
	if r.cfg.ClusterID != "" {
		return c.New.HasTag(IdentityTag(r.cfg.ClusterID))
	}
	return c.New.HasTag(r.clusterTag)
}

// isAlive reports whether t is part of a mark of life: its time or the settings beside it.
func isAlive(t string) bool {
	return strings.HasPrefix(t, PrefixAlive) || strings.HasPrefix(t, PrefixAliveEvery) || strings.HasPrefix(t, PrefixAliveInterval)
}

// SilentCluster is another installation whose newest mark of life is overdue by its own
// threshold.
type SilentCluster struct {
	// Cluster and ClusterID name it as its tags do; Entries counts its entries on the router.
	Cluster, ClusterID string
	Entries            int
	// LastSeen is its newest mark; Interval the --interval the mark carries, zero when none.
	LastSeen time.Time
	Interval time.Duration
}

// silent are the other installations of st whose newest mark of life is older than four of
// the renewal periods it carries (its own threshold; this installation's for a mark that
// carries none) at now, sorted by name and identity; none when marks are off here. Each
// installation renews its mark on its own period, so a reader's threshold would report a live
// installation whose period is longer.
func (r *Registry) silent(now time.Time, st *State) []SilentCluster {
	if r.cfg.SilentClusterAfter <= 0 {
		return nil
	}
	var out []SilentCluster
	for _, s := range st.Life.others {
		t, err := time.Parse(time.RFC3339, s.newest)
		after := r.cfg.SilentClusterAfter
		if every := duration(s.settings.every); every > 0 && mutation != "silent-by-reader" {
			after = every * lifeQuarter
		}
		if err != nil || now.Sub(t) <= after {
			continue
		}
		out = append(out, SilentCluster{Cluster: s.cluster, ClusterID: s.id, Entries: s.entries, LastSeen: t,
			Interval: duration(s.settings.interval)})
	}
	slices.SortFunc(out, func(a, b SilentCluster) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		return strings.Compare(a.ClusterID, b.ClusterID)
	})
	return out
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

// MinProbeWait is the shortest wait in which an operator syncing every interval answers a
// release probe: two and a half intervals, so that one sync may fail (the default wait is this
// for the default interval).
func MinProbeWait(interval time.Duration) time.Duration {
	return interval * 5 / 2
}

// lifeMemo is the newest mark of life of this installation that this process read or wrote,
// and when it made its first decision, both as a mark's text.
//
// knew: this process has read or written a mark of its own. One that has, and finds none,
// lost it with its entry, and renews it when due, without a restart's wait.
type lifeMemo struct {
	newest, began string
	knew          bool
	// others are the other installations' newest marks this process read, by Life.others' key.
	others map[string]lifeSeen
}

// saw takes a mark read or written.
func (l *lifeMemo) saw(mark string) {
	if mark > l.newest {
		l.newest = mark
	}
	l.knew = l.knew || mark != ""
}

// wrote takes the marks among the writes that went through: results[i] is what became of
// sent[i].
func (l *lifeMemo) wrote(sent []plan.Change, results []plan.Result) {
	for i := range results {
		if results[i].Err != nil || sent[i].New == nil || leaving(sent[i].New) {
			continue
		}
		for _, t := range sent[i].New.Tags {
			if m, ok := strings.CutPrefix(t, PrefixAlive); ok {
				l.saw(m)
			}
		}
	}
}

// renewalOnly reports whether c only renews a mark of life: an update of the tags whose only
// difference is the alive: tag. The brake and a twin's dispute hold it, as they hold marks:
// while a person has to decide, the operator writes nothing it can leave for later.
func renewalOnly(c *plan.Change) bool {
	if c.Action != plan.Update || c.Fields() != endpoint.Fields(endpoint.FieldTags) {
		return false
	}
	oldRest := slices.DeleteFunc(slices.Clone(c.Old.Tags), isAlive)
	newRest := slices.DeleteFunc(slices.Clone(c.New.Tags), isAlive)
	return len(oldRest) == len(newRest) && endpoint.SameUnion(oldRest, newRest)
}

// leaving reports whether rec is marked for deletion.
func leaving(rec *endpoint.Record) bool {
	_, marked := rec.TagValue(PrefixPending)
	return marked
}
