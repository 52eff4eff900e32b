package operator

import "github.com/alecthomas/kingpin/v2"

// Remote is what the read-only commands an admin runs from a laptop (explain, list) add to the
// command line: which context of the kubeconfig to use.
type Remote struct {
	// KubeContext is --context: the kubeconfig's context to use; empty, its current one.
	KubeContext string
}

// remoteFlags declares --context.
func remoteFlags(app *kingpin.Application, cfg *Config) {
	app.Flag("context", "The kubeconfig's context to use (default: its current context).").StringVar(&cfg.KubeContext)
}
