package operator

import (
	"os"
	"testing"
)

// TestCompactOwnEntriesFlag: --compact-own-entries and its environment variable switch
// compaction on in the registry's settings; off by default.
func TestCompactOwnEntriesFlag(t *testing.T) {
	tls := []string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}
	for _, tc := range []struct {
		name, env string
		args      []string
		want      bool
	}{
		{name: "off by default", args: tls},
		{name: "the flag", args: append([]string{"--compact-own-entries"}, tls...), want: true},
		{name: "its environment variable", env: "true", args: tls, want: true},
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
