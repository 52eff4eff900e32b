package operator

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// PodSelector is the label the chart and kustomize give the operator's Pods, by which a running
// operator is found when no leader Lease names one (leader election off).
const PodSelector = "app.kubernetes.io/name=router-hosts-operator"

// operatorContainerName is the operator's container in the chart's and kustomize's Pods.
const operatorContainerName = "operator"

// localFlags say how a process runs rather than what the operator decides; the running
// operator's values are no concern of a command run elsewhere, and some (a listen address, the
// pod's own kubeconfig) would be wrong there. The leader Lease's namespace and name are set from
// the Pod afterwards: they are the identity's inputs, and they found the Pod.
var localFlags = map[string]bool{
	"kubeconfig": true, "context": true, "from-cluster": true, "kube-api-qps": true, "kube-api-burst": true,
	"log-level": true, "log-format": true, "metrics-address": true, "leader-elect": true, "once": true, "dry-run": true,
	"webhook-address": true, "service-account-token-file": true, "force": true, "probe-wait": true,
	"leader-election-namespace": true, "leader-election-id": true,
}

// tlsFlags are the mTLS files, in ParsePEM's order.
var tlsFlags = []string{"tls-ca", "tls-cert", "tls-key"}

// RunningConfig is the configuration of the router-hosts-operator running in the cluster rc
// reaches, with the flags the person set on given's command line (or by their environment
// twins) laid over it: what a read-only command run from a laptop needs to decide as the
// operator decides (the same sources, filters, cluster name, identity and RouterHostsConfig)
// and to reach the same router, with no more than a kubeconfig.
//
// The operator is found by its leader Lease, --leader-election-id (in --leader-election-namespace
// when given, else in any namespace), whose holder names the leader's Pod; failing that, by its
// Pods' label (PodSelector), a Running one. Exactly one installation must match. The Pod's
// operator container's arguments and its ROUTER_HOSTS_OPERATOR_* variables are parsed by
// ParseFlags as the operator parsed them; the leader Lease's namespace and name are the Pod's.
// The mTLS files its --tls-ca, --tls-cert and --tls-key name are read from the Secrets (or
// ConfigMaps) mounted there and handed over in memory, in Settings.Keys, never written to disk.
// --kubeconfig, --context and the flags of local concern (localFlags) stay the person's.
//
// The person needs to get Leases and Pods (list them, when the Lease is not found) and the
// Secrets mounted in the operator's namespace.
func RunningConfig(ctx context.Context, rc *rest.Config, given *Config) (*Config, error) {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "router-hosts-operator/" + given.Version
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the core client: %w", err)
	}
	leases, err := coordinationv1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the coordination client: %w", err)
	}
	return runningConfig(ctx, kubeReader{leases: leases, core: core}, given)
}

// kubeReader is what RunningConfig reads: Leases, Pods, Secrets and ConfigMaps.
type kubeReader struct {
	leases coordinationv1client.LeasesGetter
	core   corev1client.CoreV1Interface
}

func runningConfig(ctx context.Context, kr kubeReader, given *Config) (*Config, error) {
	set, err := explicitFlags(given.args)
	if err != nil {
		return nil, err
	}
	want := lookFor{id: given.LeaderElectionID, idGiven: set["leader-election-id"]}
	if set["leader-election-namespace"] {
		want.namespace = given.LeaderElectionNS
	}
	pod, err := findOperator(ctx, kr, want)
	if err != nil {
		return nil, err
	}
	c, err := operatorContainer(pod)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("the operator's Pod %s/%s", pod.Namespace, pod.Name)
	env := &podEnv{ctx: ctx, objects: &objects{kr: kr, ns: pod.Namespace}, pod: pod, c: c}
	flags, err := podFlags(c, env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	// list's --namespace picks the entries it prints, which is not the operator's --namespace
	// (the objects it reads): the Pod's stays, and the person's is laid over the parse as the
	// filter.
	args := given.args
	if given.Command == CommandList && set["namespace"] {
		delete(set, "namespace")
		args = withoutFlag(args, "namespace")
	}
	var tokens []string
	for _, f := range flags {
		if !localFlags[f.name] && !set[f.name] {
			tokens = append(tokens, f.token())
		}
	}
	cfg, err := ParseFlags(append(tokens, args...), given.Build)
	if err != nil {
		return nil, fmt.Errorf("%s's flags with yours: %w", where, err)
	}
	cfg.args = given.args
	if cfg.Command == CommandList {
		cfg.Namespace, cfg.Filter.Namespace = cfg.Filter.Namespace, given.Filter.Namespace
	}
	if cfg.LeaderElectionNS, cfg.LeaderElectionID, err = leaseOf(flags, env); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	// The person's own files (ParseFlags has seen that all three are given), or none at all,
	// the RouterHostsConfig's Secret naming the material, are used as they are.
	if !set["tls-ca"] && cfg.TLSCA != "" {
		keys, secret, err := mountedKeys(ctx, env, [3]string{cfg.TLSCA, cfg.TLSCert, cfg.TLSKey})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		cfg.Keys, cfg.Secret = keys, secret
		cfg.TLSCA, cfg.TLSCert, cfg.TLSKey = "", "", ""
	}
	return cfg, nil
}

// lookFor is the installation asked for: the leader Lease's name (given, or the default), and
// its namespace when given.
type lookFor struct {
	namespace, id string
	idGiven       bool
}

// installation is one operator found in the cluster, by its Lease or its Pods' label, keyed by
// the Lease's namespace and name (the Lease may not exist: leader election off).
type installation struct {
	namespace, lease string
	leaseObj         *coordinationv1.Lease
	leaseRead        bool
	pods             []*corev1.Pod
	// pod is the Pod chosen, or why none was.
	pod *corev1.Pod
	why string
}

func (in *installation) String() string { return in.namespace + "/" + in.lease }

// findOperator finds the one running operator's Pod.
func findOperator(ctx context.Context, kr kubeReader, want lookFor) (*corev1.Pod, error) {
	where := "in any namespace"
	if want.namespace != "" {
		where = "in namespace " + want.namespace
	}
	found := map[string]*installation{}
	get := func(ns, lease string) *installation {
		k := ns + "/" + lease
		if found[k] == nil {
			found[k] = &installation{namespace: ns, lease: lease}
		}
		return found[k]
	}
	// The field selector is the apiserver's filter; the names are compared again for clients
	// that ignore it.
	leases, err := kr.leases.Leases(want.namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", want.id).String()})
	if err != nil {
		return nil, fmt.Errorf("listing the Leases named %s %s: %w%s", want.id, where, err, narrowHint(err, want))
	}
	for i := range leases.Items {
		if l := &leases.Items[i]; l.Name == want.id {
			in := get(l.Namespace, l.Name)
			in.leaseObj, in.leaseRead = l, true
		}
	}
	pods, err := kr.core.Pods(want.namespace).List(ctx, metav1.ListOptions{LabelSelector: PodSelector})
	if err != nil {
		return nil, fmt.Errorf("listing the Pods labelled %s %s: %w%s", PodSelector, where, err, narrowHint(err, want))
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		id := podLeaseID(p)
		if want.idGiven && id != want.id {
			continue
		}
		in := get(p.Namespace, id)
		in.pods = append(in.pods, p)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no running router-hosts-operator found %s (Lease %s not found, no Pods labelled %s); "+
			"give --router-hosts-endpoint and --tls-ca, --tls-cert and --tls-key, or --leader-election-namespace (and --leader-election-id) of the operator's Lease",
			where, want.id, PodSelector)
	}
	var running, idle []*installation
	for _, in := range sortedInstallations(found) {
		if err := in.choose(ctx, kr); err != nil {
			return nil, err
		}
		if in.pod != nil {
			running = append(running, in)
		} else {
			idle = append(idle, in)
		}
	}
	switch len(running) {
	case 1:
		return running[0].pod, nil
	case 0:
		var why []string
		for _, in := range idle {
			why = append(why, in.why)
		}
		return nil, fmt.Errorf("no running router-hosts-operator found %s (%s); give --router-hosts-endpoint and --tls-ca, --tls-cert and --tls-key, "+
			"or --leader-election-namespace (and --leader-election-id) of a running operator's Lease", where, strings.Join(why, "; "))
	}
	var names []string
	for _, in := range running {
		names = append(names, fmt.Sprintf("Lease %s (Pod %s)", in, in.pod.Name))
	}
	return nil, fmt.Errorf("%d router-hosts-operator installations found %s: %s; pick one with --leader-election-namespace, "+
		"and --leader-election-id where two share a namespace", len(running), where, strings.Join(names, ", "))
}

// narrowHint is what to do when listing across namespaces is forbidden.
func narrowHint(err error, want lookFor) string {
	if apierrors.IsForbidden(err) && want.namespace == "" {
		return " (give --leader-election-namespace, the operator's namespace, to look there alone)"
	}
	return ""
}

func sortedInstallations(found map[string]*installation) []*installation {
	out := make([]*installation, 0, len(found))
	for _, in := range found {
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b *installation) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// choose picks the installation's Pod: the Lease's holder (runElected names it
// <hostname>_<time>, the hostname being the Pod's name), else a Running Pod of those labelled,
// a ready one first. It sets why when there is none.
func (in *installation) choose(ctx context.Context, kr kubeReader) error {
	if !in.leaseRead {
		l, err := kr.leases.Leases(in.namespace).Get(ctx, in.lease, metav1.GetOptions{})
		switch {
		case err == nil:
			in.leaseObj = l
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("reading the Lease %s: %w", in, err)
		}
		in.leaseRead = true
	}
	if l := in.leaseObj; l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
		host := *l.Spec.HolderIdentity
		if i := strings.LastIndex(host, "_"); i > 0 {
			host = host[:i]
		}
		p, err := kr.core.Pods(in.namespace).Get(ctx, host, metav1.GetOptions{})
		switch {
		case err == nil && !finished(p):
			in.pod = p
			return nil
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("reading the Pod %s/%s, which holds the Lease %s: %w", in.namespace, host, in, err)
		}
		// A Pod's hostname is its name cut to 63 characters, or spec.hostname.
		for _, p := range in.pods {
			if (p.Spec.Hostname == host || len(p.Name) > 63 && p.Name[:63] == host) && !finished(p) {
				in.pod = p
				return nil
			}
		}
	}
	var candidates []*corev1.Pod
	for _, p := range in.pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			candidates = append(candidates, p)
		}
	}
	slices.SortFunc(candidates, func(a, b *corev1.Pod) int {
		if ra, rb := ready(a), ready(b); ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(candidates) > 0 {
		in.pod = candidates[0]
		return nil
	}
	lease := "Lease " + in.String() + " not found"
	if in.leaseObj != nil {
		lease = "Lease " + in.String() + " held by no Pod that exists"
	}
	pods := fmt.Sprintf("no Pods labelled %s", PodSelector)
	if len(in.pods) > 0 {
		pods = fmt.Sprintf("%d Pods labelled %s, none Running", len(in.pods), PodSelector)
	}
	in.why = lease + ", " + pods
	return nil
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podLeaseID is the leader Lease's name a labelled Pod's operator runs with, read from its
// arguments and literal environment alone: enough to tell installations apart before one is
// chosen and parsed in full.
func podLeaseID(p *corev1.Pod) string {
	id := flagDefault("leader-election-id")
	c, err := operatorContainer(p)
	if err != nil {
		return id
	}
	envar := envPrefix + "LEADER_ELECTION_ID"
	for _, e := range c.Env {
		if e.Name == envar && e.ValueFrom == nil && e.Value != "" {
			id = e.Value
		}
	}
	argv := commandLine(c)
	for i, a := range argv {
		switch {
		case strings.HasPrefix(a, "--leader-election-id="):
			id = strings.TrimPrefix(a, "--leader-election-id=")
		case a == "--leader-election-id" && i+1 < len(argv):
			id = argv[i+1]
		}
	}
	return id
}

// flagDefault is a flag's default as declared, not read from this machine's environment.
func flagDefault(name string) string {
	app := newApp(&Config{}, Build{}, func(string) string { return "" })
	if d := app.GetFlag(name).Model().Default; len(d) > 0 {
		return d[0]
	}
	return ""
}

// operatorContainer is the Pod's operator container: the one named operator, as the chart
// and kustomize name it, else the only one, else the only one of the operator's image.
func operatorContainer(p *corev1.Pod) (*corev1.Container, error) {
	cs := p.Spec.Containers
	var names []string
	var ours []*corev1.Container
	for i := range cs {
		if cs[i].Name == operatorContainerName || len(cs) == 1 {
			return &cs[i], nil
		}
		names = append(names, cs[i].Name)
		if strings.Contains(cs[i].Image, "router-hosts-operator") {
			ours = append(ours, &cs[i])
		}
	}
	if len(ours) == 1 {
		return ours[0], nil
	}
	return nil, fmt.Errorf("the Pod %s/%s has containers %s, and none is the operator's (named %s, or the only one of the router-hosts-operator image)",
		p.Namespace, p.Name, strings.Join(names, ", "), operatorContainerName)
}

// commandLine is the container's arguments as the binary receives them: the command's after
// the program itself, then the args. Without a command, the image's entrypoint is the binary.
func commandLine(c *corev1.Container) []string {
	var argv []string
	if len(c.Command) > 0 {
		argv = append(argv, c.Command[1:]...)
	}
	return append(argv, c.Args...)
}

// flagValue is one value of a flag as the running operator received it.
type flagValue struct {
	name, value string
	isBool      bool
}

// token writes the value as one argument: a switch as --name or --no-name, since kingpin takes
// no value after a switch's =.
func (f flagValue) token() string {
	if f.isBool {
		if on, _ := strconv.ParseBool(f.value); !on {
			return "--no-" + f.name
		}
		return "--" + f.name
	}
	return "--" + f.name + "=" + f.value
}

// podFlags are the flags the Pod's operator runs with, in the order it read them: its
// arguments (with $(VAR) references expanded, as the kubelet does), then the environment twins
// of the flags its arguments leave out (a flag on the command line wins, as with kingpin).
func podFlags(c *corev1.Container, env *podEnv) ([]flagValue, error) {
	argv := commandLine(c)
	for i, a := range argv {
		x, err := expand(a, env.lookup)
		if err != nil {
			return nil, err
		}
		argv[i] = x
	}
	app := newApp(&Config{}, Build{}, func(string) string { return "" })
	pc, err := app.ParseContext(argv)
	if err != nil {
		return nil, fmt.Errorf("its arguments: %w (is this binary of the operator's version? the Pod runs %s)", err, c.Image)
	}
	if cmd := pc.SelectedCommand; cmd != nil && cmd.FullCommand() != CommandRun {
		return nil, fmt.Errorf("it runs the %s command, not the operator", cmd.FullCommand())
	}
	var out []flagValue
	given := map[string]bool{}
	for _, e := range pc.Elements {
		f, ok := e.Clause.(*kingpin.FlagClause)
		if !ok || e.Value == nil {
			continue
		}
		m := f.Model()
		out = append(out, flagValue{name: m.Name, value: *e.Value, isBool: m.IsBoolFlag()})
		given[m.Name] = true
	}
	for _, m := range allFlags(app.Model()) {
		if m.Envar == "" || given[m.Name] {
			continue
		}
		v, ok, err := env.lookup(m.Envar)
		if err != nil {
			return nil, err
		}
		if !ok || v == "" {
			continue // kingpin takes an empty variable for an unset one
		}
		values := []string{v}
		if r, ok := m.Value.(interface{ IsCumulative() bool }); ok && r.IsCumulative() {
			values = strings.Split(strings.TrimRight(strings.ReplaceAll(v, "\r\n", "\n"), "\n"), "\n")
		}
		for _, x := range values {
			if m.IsBoolFlag() {
				if _, err := strconv.ParseBool(x); err != nil {
					return nil, fmt.Errorf("%s=%q: not true or false", m.Envar, x)
				}
			}
			out = append(out, flagValue{name: m.Name, value: x, isBool: m.IsBoolFlag()})
		}
	}
	return out, nil
}

// leaseOf is the leader Lease's namespace and name the Pod's operator runs with: its flags,
// else the defaults as the Pod sees them (the namespace from its POD_NAMESPACE, which the chart
// and kustomize set to the Pod's namespace).
func leaseOf(flags []flagValue, env *podEnv) (ns, id string, err error) {
	ns, id = "", flagDefault("leader-election-id")
	for _, f := range flags {
		switch f.name {
		case "leader-election-namespace":
			ns = f.value
		case "leader-election-id":
			id = f.value
		}
	}
	if ns == "" {
		podNS, _, err := env.lookup("POD_NAMESPACE")
		if err != nil {
			return "", "", err
		}
		ns = defaultLeaseNamespace(func(string) string { return podNS })
	}
	return ns, id, nil
}

// withoutFlag is args less every --name=value and --name value.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case strings.HasPrefix(a, "--"+name+"="):
		case a == "--"+name:
			i++ // its value
		default:
			out = append(out, a)
		}
	}
	return out
}
