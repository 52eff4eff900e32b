package operator

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kingpin/v2"
	"k8s.io/client-go/rest"
)

// Remote is what the read-only commands an admin runs from a laptop (explain, list) add to the
// command line: which context of the kubeconfig to use, and whether to configure the command
// as the running operator is configured (RunningConfig).
type Remote struct {
	// KubeContext is --context: the kubeconfig's context to use; empty, its current one.
	KubeContext string
	// FromCluster is --from-cluster. Given, on the command line or by its environment variable,
	// it says whether to take the running operator's configuration; not given, ReadOnlyConfig
	// decides (see there), which is why the flag's value alone means nothing.
	FromCluster bool
	// args is the command line ParseFlags read, so that RunningConfig can lay what the person
	// set over the running operator's flags.
	args []string
}

// remoteFlags declares --context and --from-cluster.
func remoteFlags(app *kingpin.Application, cfg *Config) {
	app.Flag("context", "The kubeconfig's context to use (default: its current context).").StringVar(&cfg.KubeContext)
	app.Flag("from-cluster", "Read-only commands (explain, list): configure the command as the running operator is configured, "+
		"from its Pod's arguments and environment and the Secrets its mTLS files are mounted from, found through the kubeconfig: "+
		"the holder of its leader Lease (--leader-election-id, in --leader-election-namespace or in any namespace, or the Lease its "+
		"labelled Pods name), taken only when proven the operator's, or the command refuses; the flags given here win (default: when a kubeconfig rather than a pod's service account reaches the cluster and neither "+
		"--router-hosts-endpoint nor --provider is given). --no-from-cluster: this command's flags alone.").
		BoolVar(&cfg.FromCluster)
}

// ReadOnlyConfig is the configuration and the apiserver connection a read-only command (explain,
// list) works with: cfg itself, or, from a laptop, the running operator's configuration with the
// flags the person gave laid over it (RunningConfig), so that the command decides as the
// operator decides and reaches the router without its certificates on the laptop.
//
// RunningConfig is used when --from-cluster says so; without it, when the cluster is reached
// through a kubeconfig rather than a pod's service account and the person named no router
// (neither --router-hosts-endpoint nor --provider). The rest.Config is RESTConfig's, the
// person's kubeconfig and --context, never the pod's. note (stderr) is told which Pod's
// configuration is used.
func ReadOnlyConfig(ctx context.Context, cfg *Config, note io.Writer) (*Config, *rest.Config, error) {
	rc, inCluster, err := restConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	set, err := explicitFlags(cfg.args)
	if err != nil {
		return nil, nil, err
	}
	use := !inCluster && !set["router-hosts-endpoint"] && !set["provider"]
	if set["from-cluster"] {
		use = cfg.FromCluster
	}
	if !use {
		return cfg, rc, nil
	}
	running, err := RunningConfig(ctx, rc, cfg, note)
	if err != nil {
		return nil, nil, err
	}
	return running, rc, nil
}

// explicitFlags are the flags the person set, on the command line args or by their environment
// twins, by name. kingpin's ParseContext reads the command line as Parse does but sets no value.
func explicitFlags(args []string) (map[string]bool, error) {
	app := newApp(&Config{}, Build{}, func(string) string { return "" })
	pc, err := app.ParseContext(args)
	if err != nil {
		return nil, fmt.Errorf("reading the command line: %w", err)
	}
	set := map[string]bool{}
	for _, e := range pc.Elements {
		if f, ok := e.Clause.(*kingpin.FlagClause); ok {
			set[f.Model().Name] = true
		}
	}
	// kingpin takes an empty variable for an unset one.
	for _, f := range allFlags(app.Model()) {
		if f.Envar != "" && os.Getenv(f.Envar) != "" {
			set[f.Name] = true
		}
	}
	return set, nil
}

// allFlags are the application's flags and every command's.
func allFlags(m *kingpin.ApplicationModel) []*kingpin.FlagModel {
	flags := append([]*kingpin.FlagModel(nil), m.Flags...)
	if m.CmdGroupModel != nil {
		for _, c := range m.FlattenedCommands() {
			flags = append(flags, c.Flags...)
		}
	}
	return flags
}
