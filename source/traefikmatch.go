package source

import (
	"fmt"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// hostMatchers are the Traefik matchers whose arguments are hostnames: Host and its old alias
// HostHeader for HTTP routers, HostSNI for TCP routers. HostRegexp and HostSNIRegexp take
// patterns, not names, and are skipped. Traefik's matcher names are compared case-insensitively
// here because Traefik v2 accepted any case.
var hostMatchers = map[string]bool{"host": true, "hostheader": true, "hostsni": true}

// ParseMatch returns the hostnames named by Host(...), HostHeader(...) and HostSNI(...) calls
// anywhere in a Traefik rule, normalised, in order of appearance and without duplicates, and a
// message for each argument it had to skip. It is a scanner, not an expression parser: boolean
// structure is ignored (every named host is wanted), string literals are skipped as units so a
// "Host(" inside a path never counts, and no input makes it panic or loop.
func ParseMatch(rule string) (hosts []string, problems []string) {
	seen := map[string]bool{}
	for i := 0; i < len(rule); {
		c := rule[i]
		switch {
		case c == '`' || c == '"' || c == '\'':
			_, next, _ := readString(rule, i)
			i = next
		case isIdentStart(c):
			start := i
			for i < len(rule) && isIdent(rule[i]) {
				i++
			}
			name := strings.ToLower(rule[start:i])
			j := skipSpace(rule, i)
			if j >= len(rule) || rule[j] != '(' || !hostMatchers[name] {
				continue
			}
			args, next, ok := readArgs(rule, j+1)
			i = next
			if !ok {
				problems = append(problems, fmt.Sprintf("unterminated %s(...) in rule", rule[start:start+len(name)]))
			}
			for _, a := range args {
				if name == "hostsni" && a == "*" {
					continue // HostSNI(`*`) matches any name: nothing to publish.
				}
				h, err := endpoint.NormalizeHostname(a)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s argument skipped: %v", rule[start:start+len(name)], err))
					continue
				}
				if !seen[h] {
					seen[h] = true
					hosts = append(hosts, h)
				}
			}
		default:
			i++
		}
	}
	return hosts, problems
}

// readArgs reads comma-separated string literals up to the closing parenthesis that starts at
// or after i. It returns the arguments, the index after ')' and whether the call was closed.
// Anything that is not a string literal inside the call (a nested call, a bare word) is skipped.
func readArgs(s string, i int) (args []string, next int, ok bool) {
	depth := 0
	for i < len(s) {
		switch c := s[i]; {
		case c == '`' || c == '"' || c == '\'':
			v, n, closed := readString(s, i)
			if !closed {
				return args, n, false
			}
			if depth == 0 {
				args = append(args, v)
			}
			i = n
		case c == '(':
			depth++
			i++
		case c == ')':
			if depth == 0 {
				return args, i + 1, true
			}
			depth--
			i++
		default:
			i++
		}
	}
	return args, i, false
}

// readString reads the literal starting at s[i] (a back-quote, double or single quote) and
// returns its value, the index after it, and whether it was closed. Double-quoted strings
// honour backslash escapes, as Go strings in Traefik rules do; back-quoted ones have none.
func readString(s string, i int) (string, int, bool) {
	q := s[i]
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == q:
			return b.String(), j + 1, true
		case c == '\\' && q != '`' && j+1 < len(s):
			j++
			b.WriteByte(s[j])
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), len(s), false
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func isIdentStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdent(c byte) bool      { return isIdentStart(c) || c >= '0' && c <= '9' || c == '_' }
