package soak

import (
	"strings"
)

// hostsLine is one line of the router's hosts file: what a resolver serves.
type hostsLine struct {
	IP, Hostname string
	Aliases      []string
	// Tags are read back from the line's "# comment [tag, tag]" suffix.
	Tags []string
}

// parseHostsFile reads a hosts file in the router-hosts format (IP, a tab, the hostname and its
// aliases, then optionally a tab and "# comment [tags]"), keyed by lowercase hostname, since
// names resolve without regard to case.
func parseHostsFile(b []byte) map[string][]hostsLine {
	out := map[string][]hostsLine{}
	for _, raw := range strings.Split(string(b), "\n") {
		if raw == "" || strings.HasPrefix(raw, "#") {
			continue
		}
		fields := strings.SplitN(raw, "\t", 3)
		if len(fields) < 2 {
			continue
		}
		names := strings.Fields(fields[1])
		if len(names) == 0 {
			continue
		}
		l := hostsLine{IP: fields[0], Hostname: names[0], Aliases: names[1:]}
		if len(fields) == 3 {
			suffix := fields[2]
			if i := strings.LastIndex(suffix, "["); i >= 0 && strings.HasSuffix(suffix, "]") {
				if inner := suffix[i+1 : len(suffix)-1]; inner != "" {
					l.Tags = strings.Split(inner, ", ")
				}
			}
		}
		key := strings.ToLower(l.Hostname)
		out[key] = append(out[key], l)
	}
	return out
}
