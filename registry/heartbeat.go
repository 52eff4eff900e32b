package registry

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Heartbeats. A cluster that is gone for good leaves its entries on the router, and nobody
// is told. So each installation keeps a heartbeat (PrefixAlive and the time) on its entries,
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

// beatQuarter is the share of the threshold after which a mark is renewed.
const beatQuarter = 4

// heartbeats is what one read's entries say of the heartbeats. The marks are RFC 3339 times in
// UTC, which sort as text, so a read compares them without parsing each.
type heartbeats struct {
	// newest is the newest mark on this installation's entries that stay, "" when none carries
	// one, and settings the renewal period and interval written beside it; leaving the newest
	// on its entries on their way out.
	newest, leaving string
	settings        beatSettings
	// carrier is the ID of the entry a renewal of its own goes on.
	carrier string
	// others are the other installations' entries and newest marks, by identity (by cluster
	// name for entries without one).
	others map[string]*beatSeen
}

// beatSeen is what the entries of another installation say of it.
type beatSeen struct {
	cluster, id string
	entries     int
	newest      string
	settings    beatSettings
}

// beatSettings are the values a heartbeat carries beside its time, as written: its
// renewal period and the installation's interval, in seconds ("" for a mark without them).
type beatSettings struct{ every, interval string }

func beatSettingsOf(v *view) beatSettings {
	every, _ := v.value(PrefixAliveEvery)
	interval, _ := v.value(PrefixAliveInterval)
	return beatSettings{every: every, interval: interval}
}

// ourBeatSettings are the values the marks of this installation carry with cfg.
func ourBeatSettings(cfg *Config) beatSettings {
	m := beatSettings{every: seconds(cfg.SilentClusterAfter / beatQuarter)}
	if cfg.Interval > 0 {
		m.interval = seconds(cfg.Interval)
	}
	return m
}

// beatPeriod is beatPeriodOf this installation's own marks: how long after one it writes
// again; zero when it writes none.
func (r *Registry) beatPeriod() time.Duration {
	if r.cfg.SilentClusterAfter <= 0 {
		return 0
	}
	return r.cfg.SilentClusterAfter/beatQuarter + 2*r.cfg.Interval
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// duration reads a value in seconds; zero when it is not one.
func duration(s string) time.Duration {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > int64(maxBeatSeconds) {
		return 0
	}
	return time.Duration(n) * time.Second
}

// maxBeatSeconds bounds what a mark may claim, so that a forged value overflows nothing.
const maxBeatSeconds = 100 * 365 * 24 * 3600

// tags are the tags of a mark written at now.
func (m beatSettings) tags(now time.Time) []string {
	out := []string{PrefixAlive + now.UTC().Format(time.RFC3339), PrefixAliveEvery + m.every}
	if m.interval != "" {
		out = append(out, PrefixAliveInterval+m.interval)
	}
	return out
}

// own takes one of this installation's entries, v its tags.
// A mark on an entry on its way out leaves with it: it is kept apart (leaving), so that when
// older marks stay, the newest of those is what the others will read, and is renewed when due.
func (l *heartbeats) own(rec *endpoint.Record, v *view) {
	_, leaving := v.value(PrefixPending)
	if m, ok := v.value(PrefixAlive); ok && leaving && m > l.leaving {
		l.leaving = m
	}
	if m, ok := v.value(PrefixAlive); ok && m > l.newest && !leaving {
		l.newest, l.settings = m, beatSettingsOf(v)
	}
	if !leaving && !v.has(TagPreExisting) && (l.carrier == "" || rec.ID < l.carrier) {
		l.carrier = rec.ID
	}
}

// other takes one entry of another installation, v its tags.
func (l *heartbeats) other(v *view) {
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
		l.others = map[string]*beatSeen{}
	}
	s := l.others[key]
	if s == nil {
		s = &beatSeen{cluster: name, id: id}
		l.others[key] = s
	}
	s.entries++
	if m, ok := v.value(PrefixAlive); ok && m > s.newest {
		s.newest, s.settings = m, beatSettingsOf(v)
	}
}

// heartbeat renews this installation's heartbeat when it is due at in.now: when no heartbeat
// of this installation is known (on the router, or written or read by this process: in.known),
// the newest is a quarter of the threshold old, or the newest read carries other settings than
// these (others would read it against a renewal period no longer kept). The heartbeat rides on
// the sync's first create or update of an entry of this installation when it has one; else it
// is a write of its own on the carrier. A process that never knew a heartbeat of its own (one
// lost with its entry, then a restart) waits a quarter of the threshold from in.began, its
// first decision, before it writes one of its own, so that a restart adds no write a sync
// would not make anyway. The changes it rides on are copies.
func (r *Registry) heartbeat(in *changesIn, changes []plan.Change) changed {
	return changed{changes: r.renewed(in.now, in.st, in.known, in.began, changes)}
}

func (r *Registry) renewed(now time.Time, st *State, known, began string, changes []plan.Change) []plan.Change {
	quarter := r.cfg.SilentClusterAfter / beatQuarter
	if quarter <= 0 || r.cfg.Policy.Forbids(plan.Update) {
		// Under create-only no heartbeat could be renewed: none is written.
		return changes
	}
	// The others read the newest mark on the router. While one stays, the newest that stays
	// is what they will read once the entries leaving are gone: it must be renewed when due,
	// even if this process wrote a newer one on an entry now leaving or gone. With none
	// staying, they read the newest leaving until it goes, however old. With none at all
	// they read no mark, which is never silence: the renewal waits for the newest known.
	newest := st.beats.newest
	if newest == "" {
		newest = st.beats.leaving
	}
	if newest == "" {
		newest = known
	}
	settings := ourBeatSettings(&r.cfg)
	stale := st.beats.newest != "" && st.beats.newest >= known && st.beats.settings != settings
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
			n.Tags = endpoint.SortedUnique(append(slices.DeleteFunc(slices.Clone(c.New.Tags), isBeat), tags...))
			out[i].New = &n
			return out
		}
	}
	if st.beats.carrier == "" {
		return changes
	}
	if t, err := time.Parse(time.RFC3339, began); newest == "" && err == nil && now.Sub(t) < quarter {
		return changes
	}
	for i := range changes {
		if changes[i].Old != nil && changes[i].Old.ID == st.beats.carrier {
			return changes // the carrier is written or leaves: the next sync renews
		}
	}
	for i := range st.Owned {
		if rec := &st.Owned[i]; rec.ID == st.beats.carrier {
			n := *rec
			n.Tags = append(slices.DeleteFunc(slices.Clone(rec.Tags), isBeat), tags...)
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

// isBeat reports whether t is part of a heartbeat: its time or the settings beside it.
func isBeat(t string) bool {
	return strings.HasPrefix(t, PrefixAlive) || strings.HasPrefix(t, PrefixAliveEvery) || strings.HasPrefix(t, PrefixAliveInterval)
}

// beatMemo is the newest heartbeat of this installation that this process read or wrote,
// and when it made its first decision, both as a mark's text.
//
// knew: this process has read or written a mark of its own. One that has, and finds none,
// lost it with its entry, and renews it when due, without a restart's wait.
type beatMemo struct {
	newest, began string
	knew          bool
	// others are the other installations' newest marks this process read, by heartbeats.others' key.
	others map[string]beatSeen
}

// saw takes a mark read or written.
func (l *beatMemo) saw(mark string) {
	if mark > l.newest {
		l.newest = mark
	}
	l.knew = l.knew || mark != ""
}

// wrote takes the marks among the writes that went through: results[i] is what became of
// sent[i].
func (l *beatMemo) wrote(sent []plan.Change, results []plan.Result) {
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

// beatOnly reports whether c only renews a heartbeat: an update of the tags whose only
// difference is the alive: tag. The brake and a twin's dispute hold it, as they hold marks:
// while a person has to decide, the operator writes nothing it can leave for later.
func beatOnly(c *plan.Change) bool {
	if c.Action != plan.Update || c.Fields() != endpoint.Fields(endpoint.FieldTags) {
		return false
	}
	oldRest := slices.DeleteFunc(slices.Clone(c.Old.Tags), isBeat)
	newRest := slices.DeleteFunc(slices.Clone(c.New.Tags), isBeat)
	return len(oldRest) == len(newRest) && endpoint.SameUnion(oldRest, newRest)
}

// leaving reports whether rec is marked for deletion.
func leaving(rec *endpoint.Record) bool {
	_, marked := rec.TagValue(PrefixPending)
	return marked
}
