package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
)

// TestTheFlagTableIsGenerated: docs/configuration.md carries the table the operator's command
// line makes, so a flag added, renamed, re-defaulted or re-described in
// internal/operator/flags.go without regenerating the table fails here.
func TestTheFlagTableIsGenerated(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	model, err := operator.FlagModel()
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(doc, model)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(doc) {
		t.Errorf("docs/configuration.md's flag table is not what internal/operator/flags.go says: run %s. %s", regenerate, firstDifference(doc, want))
	}
	// Every flag is in it, by the name a user types and the variable that stands for it.
	for _, f := range model.Flags {
		if f.Hidden || f.Name == "help" || f.Name == "version" {
			continue
		}
		if row := "| `--" + f.Name + "` | `" + f.Envar + "`"; !strings.Contains(string(doc), row) {
			t.Errorf("no row %q in docs/configuration.md", row)
		}
	}
}

// testApp is a command line with one of each thing the table shows.
func testApp(t *testing.T) *kingpin.ApplicationModel {
	t.Helper()
	app := kingpin.New("tool", "A tool.")
	app.DefaultEnvars()
	app.HelpFlag.NoEnvar()
	app.Flag("name", "The name in a name:<name> tag | a pipe.").Default("default").String()
	app.Flag("on", "A switch.").Bool()
	app.Flag("tag", "A tag (repeatable), e.g. team-* or *.").Default("a", "b").Strings()
	app.Flag("config", "A file (default: $CONFIG, else the in-cluster one (if any)); see --name.").String()
	app.Flag("empty", "May be empty.").Default("").String()
	app.Flag("secret", "Not for users.").Hidden().String()
	sub := app.Command("sub", "A subcommand.").Default()
	sub.Flag("only-sub", "Only sub reads it.").Default("1s").String()
	app.Command("other", "Another one.")
	if _, err := app.ParseContext(nil); err != nil {
		t.Fatal(err)
	}
	return app.Model()
}

func TestRender(t *testing.T) {
	table := strings.Join([]string{
		"",
		"Read by every command: `sub` (the default), `other`.",
		"",
		"| flag | environment variable | default | |",
		"|---|---|---|---|",
		"| `--name` | `TOOL_NAME` | `default` | The name in a name:&lt;name&gt; tag \\| a pipe. |",
		"| `--on` | `TOOL_ON` | `false` | A switch. |",
		"| `--tag` | `TOOL_TAG` (one value a line) | `a`, `b` | A tag (repeatable), e.g. team-\\* or \\*. |",
		"| `--config` | `TOOL_CONFIG` | $CONFIG, else the in-cluster one (if any) | A file; see `--name`. |",
		"| `--empty` | `TOOL_EMPTY` | `\"\"` | May be empty. |",
		"",
		"Only `tool sub` reads these:",
		"",
		"| flag | environment variable | default | |",
		"|---|---|---|---|",
		"| `--only-sub` | `TOOL_ONLY_SUB` | `1s` | Only sub reads it. |",
		"",
		"",
	}, "\n")
	for _, c := range []struct {
		name, doc, want, err string
	}{
		{name: "the table between the markers, the prose around them kept",
			doc:  "# Flags\n\nProse before.\n\n" + beginMarker + "\n" + endMarker + "\n\nProse after.\n",
			want: "# Flags\n\nProse before.\n\n" + beginMarker + "\n" + table + endMarker + "\n\nProse after.\n"},
		{name: "an outdated table replaced",
			doc:  beginMarker + "\n| `--gone` | | | |\n" + endMarker,
			want: beginMarker + "\n" + table + endMarker},
		{name: "no markers", doc: "# Flags\n", err: "markers are missing"},
		{name: "the end before the beginning", doc: endMarker + "\n" + beginMarker + "\n", err: "out of order"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := render([]byte(c.doc), testApp(t))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got\n%s\nwant\n%s\n%s", got, c.want, firstDifference([]byte(c.want), got))
			}
			again, err := render(got, testApp(t))
			if err != nil || string(again) != string(got) {
				t.Errorf("rendering the result again changes it (%v):\n%s", err, again)
			}
		})
	}
}

func TestSplitDefault(t *testing.T) {
	for _, c := range []struct{ help, rest, def string }{
		{"A file.", "A file.", ""},
		{"Only this namespace (default: all).", "Only this namespace.", "all"},
		{"Only this namespace (default: all); or more.", "Only this namespace; or more.", "all"},
		{"Derived (default: from (a) and (b)).", "Derived.", "from (a) and (b)"},
		{"Unbalanced (default: from (a.", "Unbalanced (default: from (a.", ""},
		{"Repeatable (repeatable; default: all).", "Repeatable (repeatable; default: all).", ""},
	} {
		rest, def := splitDefault(c.help)
		if rest != c.rest || def != c.def {
			t.Errorf("splitDefault(%q) = %q, %q; want %q, %q", c.help, rest, def, c.rest, c.def)
		}
	}
}

// TestCheckWithoutWrite: without -w an outdated doc is an error that says how to regenerate,
// and the file is left alone; with -w it is rewritten, and then current.
func TestCheckWithoutWrite(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "configuration.md")
	outdated := "# Configuration\n\n" + beginMarker + "\n| `--gone` | | | |\n" + endMarker + "\n"
	if err := os.WriteFile(doc, []byte(outdated), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(doc, false)
	if err == nil || !strings.Contains(err.Error(), "go run ./hack/flagdoc -w") || !strings.Contains(err.Error(), "--gone") {
		t.Fatalf("error %v, want one that names the outdated line and how to regenerate", err)
	}
	if b, _ := os.ReadFile(doc); string(b) != outdated {
		t.Fatal("the check wrote the file")
	}
	if err := run(doc, true); err != nil {
		t.Fatal(err)
	}
	if err := run(doc, false); err != nil {
		t.Fatalf("after -w: %v", err)
	}
	if b, _ := os.ReadFile(doc); !strings.Contains(string(b), "| `--metrics-address` | `ROUTER_HOSTS_OPERATOR_METRICS_ADDRESS` | `:7979` |") {
		t.Errorf("the rewritten table lacks --metrics-address:\n%s", b)
	}
}
