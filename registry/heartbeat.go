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

// beatQuarter: a heartbeat is renewed a quarter of the threshold old (docs/ownership.md).
const beatQuarter = 4

// heartbeats is what a read's entries say of heartbeats; marks, UTC RFC 3339, compare as text.
type heartbeats struct {
	newest, leaving string               // the newest on its own entries that stay, and that go
	settings        beatSettings         // newest's
	carrier         string               // the lowest ID it created that stays: a renewal's own entry
	others          map[string]*beatSeen // by identity (by cluster: tag without one)
}

// beatSeen is what the entries of another installation say of it.
type beatSeen struct {
	cluster, id, newest string
	entries             int
	settings            beatSettings
}

// beatSettings are a mark's renewal period and interval as written, in seconds ("": none).
type beatSettings struct{ every, interval string }

func beatSettingsOf(v *view) beatSettings {
	every, _ := v.value(PrefixAliveEvery)
	interval, _ := v.value(PrefixAliveInterval)
	return beatSettings{every: every, interval: interval}
}
func (m beatSettings) tags(now time.Time) []string {
	out := []string{PrefixAlive + now.UTC().Format(time.RFC3339), PrefixAliveEvery + m.every}
	if m.interval != "" {
		out = append(out, PrefixAliveInterval+m.interval)
	}
	return out
}

// beatPeriodOf is how soon a running installation renews its mark on v (zero: none there).
func beatPeriodOf(v *view) time.Duration {
	m := beatSettingsOf(v)
	if d := duration(m.every); d > 0 {
		return d + 2*duration(m.interval)
	}
	return 0
}

// beatPeriod is beatPeriodOf this installation's own marks; zero when it writes none.
func (r *Registry) beatPeriod() time.Duration {
	if r.cfg.SilentClusterAfter <= 0 {
		return 0
	}
	return r.cfg.SilentClusterAfter/beatQuarter + 2*r.cfg.Interval
}

// duration reads seconds; zero for none or over a century, so a forged value overflows nothing.
func duration(s string) time.Duration {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > 100*365*24*3600 {
		return 0
	}
	return time.Duration(n) * time.Second
}
func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// own takes one of this installation's entries, v its tags; a mark leaving with it is kept apart.
func (l *heartbeats) own(rec *endpoint.Record, v *view) {
	leaving := v.marked()
	if m, ok := v.value(PrefixAlive); ok && leaving {
		l.leaving = max(l.leaving, m)
	} else if ok && m > l.newest {
		l.newest, l.settings = m, beatSettingsOf(v)
	}
	if !leaving && !v.has(TagPreExisting) && (l.carrier == "" || rec.ID < l.carrier) {
		l.carrier = rec.ID
	}
}

// other takes another installation's entry, v its tags: it runs for each, so it builds no list.
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

// heartbeat renews this installation's heartbeat when none is known (read or in.known), the
// newest is a quarter old or carries other settings: on a copy of the sync's first write of its
// entries, else on the carrier, a quarter after in.began if none was known (restarts add none).
func (r *Registry) heartbeat(in *changesIn, changes []plan.Change) changed {
	now, st, quarter := in.now, in.st, r.cfg.SilentClusterAfter/beatQuarter
	if quarter <= 0 || r.cfg.Policy.Forbids(plan.Update) {
		return changed{changes: changes} // no mark could be renewed: none is written
	}
	// The others read the newest that stays, else the newest leaving; none is never silence.
	newest := cmp.Or(st.beats.newest, st.beats.leaving, in.known)
	settings := beatSettings{every: seconds(quarter)}
	if r.cfg.Interval > 0 {
		settings.interval = seconds(r.cfg.Interval)
	}
	stale := st.beats.newest != "" && st.beats.newest >= in.known && st.beats.settings != settings
	if t, err := time.Parse(time.RFC3339, newest); err == nil && now.Sub(t) < quarter && !stale {
		return changed{changes: changes}
	}
	tags := settings.tags(now)
	for i := range changes {
		// Only an entry it owns carries its mark: the others never read one it co-owns.
		if c := &changes[i]; r.carries(c) && (c.Old == nil || slices.ContainsFunc(st.Owned, func(rec endpoint.Record) bool { return rec.ID == c.Old.ID })) {
			out := slices.Clone(changes)
			n := *c.New
			n.Tags = endpoint.SortedUnique(append(slices.DeleteFunc(slices.Clone(c.New.Tags), isBeat), tags...))
			out[i].New = &n
			return changed{changes: out}
		}
	}
	// No carrier, a restart's wait, or the carrier is written or leaves (the next sync renews).
	t, err := time.Parse(time.RFC3339, in.began)
	if st.beats.carrier == "" || newest == "" && err == nil && now.Sub(t) < quarter ||
		slices.ContainsFunc(changes, func(c plan.Change) bool { return c.Old != nil && c.Old.ID == st.beats.carrier }) {
		return changed{changes: changes}
	}
	for i := range st.Owned {
		if rec := &st.Owned[i]; rec.ID == st.beats.carrier {
			n := *rec
			n.Tags = append(slices.DeleteFunc(slices.Clone(rec.Tags), isBeat), tags...)
			return changed{changes: append(changes[:len(changes):len(changes)], plan.Change{Action: plan.Update, Old: rec, New: &n})}
		}
	}
	return changed{changes: changes}
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

// beatMemo is what this process knows of heartbeats: its own newest and first decision's time,
// whether it knew one (none found then was lost: no restart's wait), and the others' newest.
type beatMemo struct {
	newest, began string
	knew          bool
	others        map[string]*beatSeen
}

func (l *beatMemo) saw(mark string) {
	l.newest = max(l.newest, mark)
	l.knew = l.knew || mark != ""
}

// wrote takes the marks among the writes that went through and stay (results[i]: sent[i]'s).
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

// beatOnly reports whether c only renews a heartbeat, which the brake and a twin's dispute
// hold as they hold marks: while a person has to decide, nothing that can wait is written.
func beatOnly(c *plan.Change) bool {
	if c.Action != plan.Update || c.Fields() != endpoint.Fields(endpoint.FieldTags) {
		return false
	}
	oldRest := slices.DeleteFunc(slices.Clone(c.Old.Tags), isBeat)
	newRest := slices.DeleteFunc(slices.Clone(c.New.Tags), isBeat)
	return len(oldRest) == len(newRest) && endpoint.SameUnion(oldRest, newRest)
}
func isBeat(t string) bool {
	return strings.HasPrefix(t, PrefixAlive) || strings.HasPrefix(t, PrefixAliveEvery) || strings.HasPrefix(t, PrefixAliveInterval)
}
