package operator

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// PluginBinary is the name kubectl looks for on PATH to run `kubectl router-hosts`: kubectl
// turns the dashes of a plugin's command into underscores in its file name.
const PluginBinary = "kubectl-router_hosts"

// ProgramName is the name the help, the errors and --version give the program: "kubectl
// router-hosts" when it was started as the plugin (argv0 names kubectl-router_hosts, with .exe
// on Windows), since that is what the person typed; router-hosts-operator otherwise, whatever
// the file is called.
func ProgramName(argv0 string) string {
	base := argv0[strings.LastIndexAny(argv0, `/\`)+1:]
	if len(base) > 4 && strings.EqualFold(base[len(base)-4:], ".exe") {
		base = base[:len(base)-4]
	}
	if base == PluginBinary {
		return "kubectl router-hosts"
	}
	return "router-hosts-operator"
}

// asProgram gives app the name the program was started by, for its help. kingpin names the
// environment variables after the application's name when it initialises the application, so it
// is initialised first: the twins stay ROUTER_HOSTS_OPERATOR_* whatever the binary is called.
func asProgram(app *kingpin.Application, argv0 string) error {
	if _, err := app.ParseContext(nil); err != nil {
		return fmt.Errorf("initialising the command line: %w", err)
	}
	app.Name = ProgramName(argv0)
	return nil
}
