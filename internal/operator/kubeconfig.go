package operator

import (
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// homeKubeconfig is ~/.kube/config; a variable for the tests, which have no home of their own.
var homeKubeconfig = clientcmd.RecommendedHomeFile

// RESTConfig is how every command reaches the apiserver, the kubeconfig loaded as kubectl
// loads it with one exception: --kubeconfig (whose default is $KUBECONFIG, a file or a list
// of them, merged as kubectl merges them), else the pod's own service account when the process
// runs in a pod, else ~/.kube/config; --context picks a context other than the current one.
//
// The exception is that in a pod, the service account wins over a ~/.kube/config, as it always
// has for the operator: a pod that nothing points at a kubeconfig runs with its own rights.
// Given --context, a kubeconfig is wanted, so the service account is not tried.
func RESTConfig(cfg *Config) (*rest.Config, error) {
	rc, _, err := restConfig(cfg)
	return rc, err
}

// restConfig is RESTConfig that also says whether the pod's service account is used, which
// is how a command tells that it runs in the cluster rather than on someone's machine.
func restConfig(cfg *Config) (_ *rest.Config, inCluster bool, err error) {
	var icErr error // why the service account could not be used, when the process is in a pod
	if cfg.Kubeconfig == "" && cfg.KubeContext == "" {
		rc, err := rest.InClusterConfig()
		if err == nil {
			return rc, true, nil
		}
		if !errors.Is(err, rest.ErrNotInCluster) {
			icErr = err
		}
	}
	// The rules are built here rather than by NewDefaultClientConfigLoadingRules, which reads
	// $KUBECONFIG again behind --kubeconfig's back and may move an old ~/.kube/.kubeconfig
	// into place: a read-only command writes nothing on the person's machine.
	rules := &clientcmd.ClientConfigLoadingRules{}
	switch paths := filepath.SplitList(cfg.Kubeconfig); len(paths) {
	case 0:
		rules.Precedence = []string{homeKubeconfig}
	case 1:
		// One file must exist, as kubectl --kubeconfig wants it to.
		rules.ExplicitPath = paths[0]
	default:
		rules.Precedence = paths
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.KubeContext}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	switch {
	case err != nil && icErr != nil:
		return nil, false, fmt.Errorf("loading kubeconfig: the pod's service account: %v; and %w", icErr, err)
	case err != nil && clientcmd.IsEmptyConfig(err):
		return nil, false, fmt.Errorf("loading kubeconfig: none found (--kubeconfig, $KUBECONFIG, %s) and not in a pod: %w", homeKubeconfig, err)
	case err != nil:
		return nil, false, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return rc, false, nil
}
