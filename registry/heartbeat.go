package registry

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Heartbeats. A cluster gone for good leaves its entries on the router, and nobody is told. So
// each installation keeps a heartbeat (PrefixAlive) on its entries, renewed once the newest is
// a quarter of the silent-cluster threshold old, and every installation reports the others
// whose newest is older than their threshold. Nothing is deleted for it: `release` is a
// person's decision. An installation that never wrote a mark (an older version, one under
// --policy=create-only or with only adopted entries) is never reported silent.

// beatQuarter is the share of the threshold after which a mark is renewed.
const beatQuarter = 4

// heartbeats is what one read's entries say of the heartbeats. The marks are RFC 3339 times in
// UTC, which sort as text, so a read compares them without parsing each.
type heartbeats struct {
	// newest is the newest mark on this installation's entries that stay, with its settings;
	// leaving the newest on its entries on their way out.
	newest, leaving string
	settings        beatSettings
	// carrier is the entry a renewal of its own goes on: the lowest ID it created that stays.
	carrier string
	// others are the other installations' by identity (by cluster: tag without one).
	others map[string]*beatSeen
}

// beatSeen is what the entries of another installation say of it.
type beatSeen struct {
	cluster, id string
	entries     int
	newest      string
	settings    beatSettings
}

// beatSettings are what a mark carries beside its time, as written: its renewal period and
// the installation's interval, in seconds ("" for a mark without them).
type beatSettings struct{ every, interval string }

func beatSettingsOf(v *view) beatSettings {
	every, _ := v.value(PrefixAliveEvery)
	interval, _ := v.value(PrefixAliveInterval)
	return beatSettings{every: every, interval: interval}
}

// beatPeriodOf is how long after its heartbeat on v a running installation writes again: the
// renewal period the mark carries plus two of its intervals; zero for an entry without one.
func beatPeriodOf(v *view) time.Duration {
	every, _ := v.value(PrefixAliveEvery)
	d := duration(every)
	if d == 0 {
		return 0
	}
	interval, _ := v.value(PrefixAliveInterval)
	return d + 2*duration(interval)
}

// beatPeriod is beatPeriodOf this installation's own marks; zero when it writes none.
func (r *Registry) beatPeriod() time.Duration {
	if r.cfg.SilentClusterAfter <= 0 {
		return 0
	}
	return r.cfg.SilentClusterAfter/beatQuarter + 2*r.cfg.Interval
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// duration reads a value in seconds; zero when it is none, or more than a century, so that a
// forged value overflows nothing.
func duration(s string) time.Duration {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > 100*365*24*3600 {
		return 0
	}
	return time.Duration(n) * time.Second
}

func (m beatSettings) tags(now time.Time) []string {
	out := []string{PrefixAlive + now.UTC().Format(time.RFC3339), PrefixAliveEvery + m.every}
	if m.interval != "" {
		out = append(out, PrefixAliveInterval+m.interval)
	}
	return out
}

// own takes one of this installation's entries, v its tags. A mark on an entry on its way out
// leaves with it, so it is kept apart: the newest that stays is what the others will read.
func (l *heartbeats) own(rec *endpoint.Record, v *view) {
	_, leaving := v.value(PrefixPending)
	if m, ok := v.value(PrefixAlive); ok && leaving {
		l.leaving = max(l.leaving, m)
	} else if ok && m > l.newest {
		l.newest, l.settings = m, beatSettingsOf(v)
	}
	if !leaving && !v.has(TagPreExisting) && (l.carrier == "" || rec.ID < l.carrier) {
		l.carrier = rec.ID
	}
}

// other takes one entry of another installation, v its tags. It reads them as clusterID and
// clusterNames do, without building their lists: this runs for every other cluster's entry.
func (l *heartbeats) other(v *view) {
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

// heartbeat renews this installation's heartbeat when due: when none is known (on the router
// or to this process: in.known), the newest is a quarter of the threshold old, or it carries
// other settings (the others would read it against a period no longer kept). The mark rides on
// the sync's first create or update of an entry of this installation, else it is a write of its
// own on the carrier; a process that never knew a mark of its own waits a quarter from its
// first decision (in.began) before such a write, so that a restart adds none. The changes it
// rides on are copies.
func (r *Registry) heartbeat(in *changesIn, changes []plan.Change) changed {
	return changed{changes: r.renewed(in.now, in.st, in.known, in.began, changes)}
}

func (r *Registry) renewed(now time.Time, st *State, known, began string, changes []plan.Change) []plan.Change {
	quarter := r.cfg.SilentClusterAfter / beatQuarter
	if quarter <= 0 || r.cfg.Policy.Forbids(plan.Update) {
		return changes // no mark could be renewed: none is written
	}
	// The others read the newest that stays once the entries leaving are gone; with none
	// staying, the newest leaving; with none at all no mark, which is never silence.
	newest := cmp.Or(st.beats.newest, st.beats.leaving, known)
	settings := beatSettings{every: seconds(quarter)}
	if r.cfg.Interval > 0 {
		settings.interval = seconds(r.cfg.Interval)
	}
	stale := st.beats.newest != "" && st.beats.newest >= known && st.beats.settings != settings
	if t, err := time.Parse(time.RFC3339, newest); err == nil && now.Sub(t) < quarter && !stale {
		return changes
	}
	tags := settings.tags(now)
	for i := range changes {
		// Only an entry this installation owns carries its mark: the others would never read it
		// on one it co-owns under a former name.
		if c := &changes[i]; r.carries(c) && (c.Old == nil || slices.ContainsFunc(st.Owned, func(rec endpoint.Record) bool { return rec.ID == c.Old.ID })) {
			out := slices.Clone(changes)
			n := *c.New
			n.Tags = endpoint.SortedUnique(append(slices.DeleteFunc(slices.Clone(c.New.Tags), isBeat), tags...))
			out[i].New = &n
			return out
		}
	}
	// No carrier, a restart's wait, or the carrier is written or leaves (the next sync renews).
	t, err := time.Parse(time.RFC3339, began)
	if st.beats.carrier == "" || newest == "" && err == nil && now.Sub(t) < quarter ||
		slices.ContainsFunc(changes, func(c plan.Change) bool { return c.Old != nil && c.Old.ID == st.beats.carrier }) {
		return changes
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

func isBeat(t string) bool {
	return strings.HasPrefix(t, PrefixAlive) || strings.HasPrefix(t, PrefixAliveEvery) || strings.HasPrefix(t, PrefixAliveInterval)
}

// beatMemo is what this process knows of heartbeats: the newest of its own it read or wrote
// and when it made its first decision, both as a mark's text; knew, that it read or wrote one
// (so finding none, it lost it with its entry, and renews it without a restart's wait); and the
// other installations' newest it read, by heartbeats.others' key.
type beatMemo struct {
	newest, began string
	knew          bool
	others        map[string]*beatSeen
}

func (l *beatMemo) saw(mark string) {
	l.newest = max(l.newest, mark)
	l.knew = l.knew || mark != ""
}

// wrote takes the marks among the writes that went through and stay: results[i] is what
// became of sent[i].
func (l *beatMemo) wrote(sent []plan.Change, results []plan.Result) {
	for i := range results {
		n := sent[i].New
		if results[i].Err != nil || n == nil || slices.ContainsFunc(n.Tags, func(t string) bool { return strings.HasPrefix(t, PrefixPending) }) {
			continue
		}
		for _, t := range n.Tags {
			if m, ok := strings.CutPrefix(t, PrefixAlive); ok {
				l.saw(m)
			}
		}
	}
}

// beatOnly reports whether c only renews a heartbeat. The brake and a twin's dispute hold it,
// as they hold marks: while a person has to decide, the operator writes nothing it can leave
// for later.
func beatOnly(c *plan.Change) bool {
	if c.Action != plan.Update || c.Fields() != endpoint.Fields(endpoint.FieldTags) {
		return false
	}
	oldRest := slices.DeleteFunc(slices.Clone(c.Old.Tags), isBeat)
	newRest := slices.DeleteFunc(slices.Clone(c.New.Tags), isBeat)
	return len(oldRest) == len(newRest) && endpoint.SameUnion(oldRest, newRest)
}
