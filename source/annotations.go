package source

import (
	"strconv"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// maxGraceSeconds bounds the grace-period annotation (one year).
const maxGraceSeconds = 365 * 24 * 3600

// overrides is what an object's annotations say, already validated. Problems are returned as
// messages, so one bad value is reported and ignored without affecting the rest.
type overrides struct {
	// ips from ip-address; nil when the annotation is absent.
	ips []string
	// badIPs is true when ip-address is present but invalid: the object's hostnames are held.
	badIPs      bool
	tags        []string
	aliases     []string
	gracePeriod *time.Duration
	problems    []Problem
}

// parseOverrides reads the override annotations of one object.
func parseOverrides(ann map[string]string) overrides {
	var o overrides
	if raw, ok := ann[AnnotationIPAddress]; ok {
		for _, part := range splitList(raw) {
			ip, err := endpoint.NormalizeIP(part)
			if err != nil {
				o.badIPs = true
				o.problems = append(o.problems, invalidAnnotation("annotation %s: %v; hostnames held until it is fixed", AnnotationIPAddress, err))
				continue
			}
			o.ips = append(o.ips, ip)
		}
		if len(o.ips) == 0 && !o.badIPs {
			o.badIPs = true
			o.problems = append(o.problems, invalidAnnotation("annotation %s is empty; hostnames held until it is fixed", AnnotationIPAddress))
		}
		o.ips = endpoint.SortedUnique(o.ips)
	}
	for _, t := range splitList(ann[AnnotationTags]) {
		if err := endpoint.ValidateTag(t); err != nil {
			o.problems = append(o.problems, invalidAnnotation("annotation %s: %v; dropped", AnnotationTags, err))
			continue
		}
		o.tags = append(o.tags, t)
	}
	o.tags = endpoint.SortedUnique(o.tags)
	o.aliases = splitList(ann[AnnotationAliases])
	if raw, ok := ann[AnnotationGracePeriod]; ok {
		secs, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		// A year is far beyond any sensible grace period, and keeps the duration from overflowing.
		if err != nil || secs < 0 || secs > maxGraceSeconds {
			o.problems = append(o.problems, invalidAnnotation("annotation %s: %q is not a whole number of seconds from 0 to a year; ignored", AnnotationGracePeriod, raw))
		} else {
			d := time.Duration(secs) * time.Second
			o.gracePeriod = &d
		}
	}
	return o
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
