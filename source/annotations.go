package source

import (
	"strconv"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// maxGraceSeconds bounds the grace-period annotation (one year).
const maxGraceSeconds = 365 * 24 * 3600

// overrides is what an object says beside its hostnames (the override annotations, or a
// HostMapping's spec), already validated. Problems are returned as messages, so one bad value
// is reported and ignored without affecting the rest.
type overrides struct {
	// ips are the addresses asked for; nil when none is given. names are hostnames whose
	// addresses are asked for (external-dns's target annotation), resolved by DNS.
	ips, names []string
	// badIPs is true when addresses are given but one is invalid: the hostnames are held.
	badIPs      bool
	tags        []string
	aliases     []string
	gracePeriod *time.Duration
	// shared: the object shares its hostnames with other clusters (AnnotationShared).
	shared   bool
	problems []Problem
	// aliasesFrom names where the aliases came from, for problems found when they are
	// normalised against each hostname.
	aliasesFrom string
}

// parseOverrides reads the override annotations of one object.
func parseOverrides(ann map[string]string) overrides {
	o := overrides{aliasesFrom: "annotation " + AnnotationAliases}
	if raw, ok := ann[AnnotationIPAddress]; ok {
		o.setIPs("annotation "+AnnotationIPAddress, splitList(raw))
	}
	o.setTags("annotation "+AnnotationTags, splitList(ann[AnnotationTags]))
	o.aliases = splitList(ann[AnnotationAliases])
	o.setGracePeriod(ann)
	o.setShared(ann)
	return o
}

// setIPs takes the addresses given in from; present but empty or invalid holds the hostnames.
func (o *overrides) setIPs(from string, values []string) {
	for _, v := range values {
		ip, err := endpoint.NormalizeIP(v)
		if err != nil {
			o.badIPs = true
			o.problems = append(o.problems, invalidAnnotation("%s: %v; hostnames held until it is fixed", from, err))
			continue
		}
		o.ips = append(o.ips, ip)
	}
	if len(o.ips) == 0 && !o.badIPs {
		o.badIPs = true
		o.problems = append(o.problems, invalidAnnotation("%s is empty; hostnames held until it is fixed", from))
	}
	o.ips = endpoint.SortedUnique(o.ips)
}

// setTags takes the valid tags given in from, dropping the others with a problem each.
func (o *overrides) setTags(from string, values []string) {
	for _, t := range values {
		if err := endpoint.ValidateTag(t); err != nil {
			o.problems = append(o.problems, invalidAnnotation("%s: %v; dropped", from, err))
			continue
		}
		o.tags = append(o.tags, t)
	}
	o.tags = endpoint.SortedUnique(o.tags)
}

// setGracePeriod reads the grace-period annotation, which every kind has.
func (o *overrides) setGracePeriod(ann map[string]string) {
	raw, ok := ann[AnnotationGracePeriod]
	if !ok {
		return
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	// A year is far beyond any sensible grace period, and keeps the duration from overflowing.
	if err != nil || secs < 0 || secs > maxGraceSeconds {
		o.problems = append(o.problems, invalidAnnotation("annotation %s: %q is not a whole number of seconds from 0 to a year; ignored", AnnotationGracePeriod, raw))
		return
	}
	d := time.Duration(secs) * time.Second
	o.gracePeriod = &d
}

// setShared reads the shared annotation, which every kind has: "true" or "false"; any other
// value is reported and read as "false", since sharing is a consent never given by mistake.
func (o *overrides) setShared(ann map[string]string) {
	raw, ok := ann[AnnotationShared]
	if !ok {
		return
	}
	v, err := strconv.ParseBool(strings.TrimSpace(raw))
	if err != nil {
		o.problems = append(o.problems, invalidAnnotation("annotation %s: %q is neither \"true\" nor \"false\"; the names are not shared", AnnotationShared, raw))
		return
	}
	o.shared = v
}

// splitList splits a comma-separated annotation, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
