package operator

import (
	"os"
	"testing"
)

// TestCompactOwnEntriesFlag: compaction is on by default; --no-compact-own-entries and its
// environment variable set to false switch it off in the registry's settings.
func TestCompactOwnEntriesFlag(t *testing.T) {
	tls := []string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}
	for _, tc := range []struct {
		name, env string
		args      []string
		want      bool
	}{
		{name: "on by default", args: tls, want: true},
		{name: "the flag", args: append([]string{"--compact-own-entries"}, tls...), want: true},
		{name: "turned off", args: append([]string{"--no-compact-own-entries"}, tls...)},
		{name: "its environment variable", env: "false", args: tls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envPrefix+"COMPACT_OWN_ENTRIES", tc.env)
			if tc.env == "" {
				os.Unsetenv(envPrefix + "COMPACT_OWN_ENTRIES")
			}
			cfg, err := ParseFlags(tc.args, Build{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.settings().CompactOwnEntries; got != tc.want {
				t.Errorf("CompactOwnEntries %v, want %v", got, tc.want)
			}
		})
	}
}
