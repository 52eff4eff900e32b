package operator

import (
	"os"
	"testing"
)

// The setting of the "Adding a rule" recipe of docs/ownership.md, carried out as written: its
// field and its flag. The registry's recipe_test.go builds the stage and checks the page.

// recipeConfig stands for Config with the recipe's field added to the registry's settings.
type recipeConfig struct {
	*Config
	// RefuseTestNames: no name under .test is written.
	RefuseTestNames bool
}

// TestTheRecipesFlagFillsItsSetting: one line in newApp gives the setting its flag and its
// environment variable, which fill the field the registry reads.
func TestTheRecipesFlagFillsItsSetting(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  string
		want bool
	}{
		{"unset", nil, "", false},
		{"the flag", []string{"--refuse-test-names"}, "", true},
		{"its environment variable", nil, "true", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("ROUTER_HOSTS_OPERATOR_REFUSE_TEST_NAMES", c.env)
			if c.env == "" {
				os.Unsetenv("ROUTER_HOSTS_OPERATOR_REFUSE_TEST_NAMES")
			}
			cfg := &recipeConfig{Config: &Config{}}
			app := newApp(cfg.Config, Build{}, os.Getenv)
			// Step 4: its flag, in newApp.
			app.Flag("refuse-test-names", "Never write names under .test, which RFC 2606 keeps for tests.").BoolVar(&cfg.RefuseTestNames)
			if _, err := app.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if cfg.RefuseTestNames != c.want {
				t.Errorf("RefuseTestNames %v, want %v", cfg.RefuseTestNames, c.want)
			}
		})
	}
}
