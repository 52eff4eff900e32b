package operator

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"

	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
)

// PodSelector is the label the chart and kustomize give the operator's Pods, by which the Leases
// of releases that name their own are found.
const PodSelector = operatorLabel + "=router-hosts-operator"

// operatorLabel is the key of PodSelector, which the chart and kustomize also give the
// operator's service account.
const operatorLabel = "app.kubernetes.io/name"

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
// when given, else in any namespace), or the Lease its labelled Pods name (PodSelector); exactly
// one must be found, and its holder proven the operator's (findOperator), else it is an error:
// a Pod labelled as the operator's proves nothing. note is told which Pod was used. The Pod's
// operator container's arguments and its ROUTER_HOSTS_OPERATOR_* variables are parsed by
// ParseFlags as the operator parsed them; the leader Lease's namespace and name are the Pod's.
// The mTLS files its --tls-ca, --tls-cert and --tls-key name are read from the Secrets (or
// ConfigMaps) mounted there and handed over in memory, in Settings.Keys, never written to disk.
// --kubeconfig, --context and the flags of local concern (localFlags) stay the person's.
//
// The person needs to get Leases and Pods (list them, when the Lease is not found), the Pod's
// service account and the Secrets mounted in the operator's namespace.
func RunningConfig(ctx context.Context, rc *rest.Config, given *Config, note io.Writer) (*Config, error) {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "router-hosts-operator/" + given.Version
	core, err := kube.NewCore(rc)
	if err != nil {
		return nil, err
	}
	coordination, err := kube.NewCoordination(rc)
	if err != nil {
		return nil, err
	}
	kr := kubeReader{leases: coordination.Leases, pods: core.Pods, secrets: core.Secrets, configMaps: core.ConfigMaps, serviceAccounts: core.ServiceAccounts}
	return runningConfig(ctx, kr, given, note)
}

// kubeReader is what RunningConfig reads: Leases, Pods, service accounts, Secrets and
// ConfigMaps.
type kubeReader struct {
	leases          kube.Leases
	pods            kube.Pods
	serviceAccounts kube.ServiceAccounts
	secrets         kube.Secrets
	configMaps      kube.ConfigMaps
}

func runningConfig(ctx context.Context, kr kubeReader, given *Config, note io.Writer) (*Config, error) {
	set, err := explicitFlags(given.args)
	if err != nil {
		return nil, err
	}
	want := lookFor{id: given.LeaderElectionID, idGiven: set["leader-election-id"]}
	if set["leader-election-namespace"] {
		want.namespace = given.LeaderElectionNS
	}
	pod, in, err := findOperator(ctx, kr, want)
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
	// The Lease's namespace is the identity's input too: a Pod that would lead elsewhere is not
	// the one the Lease proves.
	if cfg.LeaderElectionNS != in.namespace || cfg.LeaderElectionID != in.lease {
		return nil, fmt.Errorf("no Pod proven to be the router-hosts-operator's: %s holds the Lease %s but runs with the Lease %s/%s; %s, or %s",
			where, in, cfg.LeaderElectionNS, cfg.LeaderElectionID, giveConnection, pickLease)
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
	fmt.Fprintf(note, "using the configuration of pod %s/%s (leader, Lease %s)\n", pod.Namespace, pod.Name, in)
	return cfg, nil
}

// lookFor is the installation asked for: the leader Lease's name (given, or the default), and
// its namespace when given.
type lookFor struct {
	namespace, id string
	idGiven       bool
}

// installation is one operator found in the cluster: a leader Lease, found by its name or
// named by the arguments of Pods labelled as the operator's.
type installation struct {
	namespace, lease string
	leaseObj         *coordinationv1.Lease
	// pods are the Pods labelled as the operator's whose arguments name this Lease, among
	// which a holder whose name is longer than its hostname is found.
	pods []*corev1.Pod
	// pod is the Pod proven to be the operator's, or why none is.
	pod *corev1.Pod
	why string
}

func (in *installation) String() string { return in.namespace + "/" + in.lease }

// The connection flags that take the place of a running operator's configuration, and the
// flags that pick an installation, for the errors below.
const (
	giveConnection = "give --router-hosts-endpoint and --tls-ca, --tls-cert and --tls-key"
	pickLease      = "--leader-election-namespace (and --leader-election-id) of the operator's Lease"
)

// findOperator finds the Pod whose configuration a read-only command takes, and the Lease it
// holds. That Pod must be proven the operator's (prove): anyone who can create a Pod can label
// it as the operator's, and its arguments pick the router and the DNS server asked. So exactly
// one Lease of that name must be found, and its holder proven; anything else is an error that
// says what to give instead.
func findOperator(ctx context.Context, kr kubeReader, want lookFor) (*corev1.Pod, *installation, error) {
	where := "in any namespace"
	if want.namespace != "" {
		where = "in namespace " + want.namespace
	}
	found := map[string]*installation{}
	// The field selector is the apiserver's filter; the names are compared again for clients
	// that ignore it.
	leases, err := kr.leases(want.namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", want.id).String()})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the Leases named %s %s: %w%s", want.id, where, err, narrowHint(err, want))
	}
	for i := range leases.Items {
		if l := &leases.Items[i]; l.Name == want.id {
			found[l.Namespace+"/"+l.Name] = &installation{namespace: l.Namespace, lease: l.Name, leaseObj: l}
		}
	}
	pods, err := kr.pods(want.namespace).List(ctx, metav1.ListOptions{LabelSelector: PodSelector})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the Pods labelled %s %s: %w%s", PodSelector, where, err, narrowHint(err, want))
	}
	// A Lease named by labelled Pods alone (a chart's release names its own) is read once.
	absent := map[string]bool{}
	var leaseless []string
	for i := range pods.Items {
		p := &pods.Items[i]
		id := podLeaseID(p)
		if want.idGiven && id != want.id {
			continue
		}
		k := p.Namespace + "/" + id
		if found[k] == nil && !absent[k] {
			l, err := kr.leases(p.Namespace).Get(ctx, id, metav1.GetOptions{})
			switch {
			case err == nil:
				found[k] = &installation{namespace: p.Namespace, lease: id, leaseObj: l}
			case apierrors.IsNotFound(err):
				absent[k] = true
			default:
				return nil, nil, fmt.Errorf("reading the Lease %s: %w", k, err)
			}
		}
		if in := found[k]; in != nil {
			in.pods = append(in.pods, p)
		} else {
			leaseless = append(leaseless, p.Namespace+"/"+p.Name)
		}
	}
	if len(found) == 0 {
		pods := fmt.Sprintf("no Pods labelled %s", PodSelector)
		if len(leaseless) > 0 {
			slices.Sort(leaseless)
			pods = fmt.Sprintf("Pods labelled %s but holding no Lease, which proves nothing: %s", PodSelector, strings.Join(leaseless, ", "))
		}
		return nil, nil, fmt.Errorf("no router-hosts-operator found %s (no Lease %s; %s); its configuration is taken only from the Pod holding its leader Lease: %s, or %s",
			where, want.id, pods, giveConnection, pickLease)
	}
	all := sortedInstallations(found)
	for _, in := range all {
		if err := in.prove(ctx, kr); err != nil {
			return nil, nil, err
		}
	}
	if len(all) > 1 {
		var names []string
		for _, in := range all {
			if in.pod != nil {
				names = append(names, fmt.Sprintf("Lease %s (Pod %s)", in, in.pod.Name))
			} else {
				names = append(names, fmt.Sprintf("Lease %s (%s)", in, in.why))
			}
		}
		return nil, nil, fmt.Errorf("%d router-hosts-operator installations found %s: %s; pick one with --leader-election-namespace, "+
			"and --leader-election-id where two share a namespace, or %s", len(all), where, strings.Join(names, ", "), giveConnection)
	}
	in := all[0]
	if in.pod == nil {
		return nil, nil, fmt.Errorf("no Pod proven to be the router-hosts-operator's %s: %s; %s, or %s", where, in.why, giveConnection, pickLease)
	}
	return in.pod, in, nil
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

// prove sets the installation's Pod: the Lease's holder (runElected names it
// <hostname>_<time>, the hostname being the Pod's name), when it is the operator's by every
// mark the chart and kustomize give it (operatorMarks). Else it sets why.
func (in *installation) prove(ctx context.Context, kr kubeReader) error {
	l := in.leaseObj
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		in.why = "Lease " + in.String() + " held by no one (leader election off, or no replica leads)"
		return nil
	}
	host := *l.Spec.HolderIdentity
	if i := strings.LastIndex(host, "_"); i > 0 {
		host = host[:i]
	}
	p, err := kr.pods(in.namespace).Get(ctx, host, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		p = nil
		// A Pod's hostname is its name cut to 63 characters, or spec.hostname.
		for _, q := range in.pods {
			if q.Spec.Hostname == host || len(q.Name) > 63 && q.Name[:63] == host {
				p = q
			}
		}
	case err != nil:
		return fmt.Errorf("reading the Pod %s/%s, which holds the Lease %s: %w", in.namespace, host, in, err)
	}
	if p == nil {
		in.why = "Lease " + in.String() + " held by " + host + ", a Pod that does not exist"
		return nil
	}
	why, err := operatorMarks(ctx, kr, p, in.lease)
	if err != nil {
		return err
	}
	if why != "" {
		in.why = fmt.Sprintf("Lease %s held by the Pod %s/%s, which %s", in, p.Namespace, p.Name, why)
		return nil
	}
	in.pod = p
	return nil
}

// operatorMarks is why the Pod p, which holds the Lease lease of its namespace, is not proven
// the operator's, or "": it has not finished, carries the chart's label, is made by a
// ReplicaSet (the operator's Deployment's), runs as a service account the chart labels as
// the operator's (not the namespace's default), and its own arguments name that Lease.
func operatorMarks(ctx context.Context, kr kubeReader, p *corev1.Pod, lease string) (string, error) {
	if finished(p) {
		return "has finished (" + string(p.Status.Phase) + ")", nil
	}
	name, _ := strings.CutPrefix(PodSelector, operatorLabel+"=")
	if p.Labels[operatorLabel] != name {
		return "is not labelled " + PodSelector, nil
	}
	if owner := metav1.GetControllerOf(p); owner == nil || owner.Kind != "ReplicaSet" || !strings.HasPrefix(owner.APIVersion, "apps/") {
		return "is not made by a ReplicaSet, as the operator's Deployment makes its Pods", nil
	}
	if id := podLeaseID(p); id != lease {
		return "runs with the Lease " + id + ", not this one", nil
	}
	sa := p.Spec.ServiceAccountName
	if sa == "" || sa == "default" {
		return "runs as the namespace's default service account, not the operator's", nil
	}
	a, err := kr.serviceAccounts(p.Namespace).Get(ctx, sa, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "runs as the service account " + sa + ", which does not exist", nil
	case err != nil:
		return "", fmt.Errorf("reading the service account %s/%s of the Pod %s, which holds the Lease %s/%s: %w", p.Namespace, sa, p.Name, p.Namespace, lease, err)
	case a.Labels[operatorLabel] != name:
		return "runs as the service account " + sa + ", which is not labelled " + PodSelector + " as the chart's and kustomize's is", nil
	}
	return "", nil
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
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
// arguments (with $(VAR) references expanded, as the kubelet does), then the environment variables
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
