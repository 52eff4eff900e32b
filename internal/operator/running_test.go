package operator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

const (
	opNS     = "router-hosts-system"
	tlsMount = "/etc/router-hosts/tls"
)

// pemFiles are a CA, a client certificate and its key, as a Secret holds them.
func pemFiles(t *testing.T) map[string][]byte {
	t.Helper()
	pki, err := rhtestserver.WritePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for k, f := range map[string]string{"ca.crt": pki.CAFile(), "tls.crt": pki.CertFile(), "tls.key": pki.KeyFile()} {
		if out[k], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// chartArgs are the arguments the chart gives the operator, the connection by mounted files.
func chartArgs(cluster, lease string) []string {
	return []string{"--source=ingress", "--source=hostmapping", "--router-hosts-endpoint=router.lan:50051",
		"--tls-ca=" + tlsMount + "/ca.crt", "--tls-cert=" + tlsMount + "/tls.crt", "--tls-key=" + tlsMount + "/tls.key",
		"--cluster-name=" + cluster, "--adopt-namespace=", "--config-name=default", "--leader-elect",
		"--leader-election-id=" + lease, "--metrics-address=:7979", "--log-format=json", "--log-level=info"}
}

// chartSA is the service account the chart and kustomize make, labelled as the operator's.
const chartSA = "router-hosts-operator"

// lookAlikeArgs are a tenant's Pod's arguments, labelled as the operator's: its own router and
// DNS server.
func lookAlikeArgs() []string {
	args := chartArgs("evil", "router-hosts-operator")
	args[2] = "--router-hosts-endpoint=evil.lan:50051"
	return append(args, "--verify-dns=10.6.6.6")
}

// operatorPod is a Running, ready Pod of the operator as the chart makes it: made by the
// Deployment's ReplicaSet, running as chartSA, the Secret router-hosts-mtls mounted at
// tlsMount, POD_NAMESPACE from the downward API.
func operatorPod(ns, name string, args ...string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app.kubernetes.io/name": "router-hosts-operator"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "router-hosts-operator-7c9d8", UID: "rs", Controller: &yes}}},
		Spec: corev1.PodSpec{ServiceAccountName: chartSA,
			Containers: []corev1.Container{{Name: "operator", Image: "ghcr.io/router-hosts-operator/router-hosts-operator:v0.1.0", Args: args,
				Env:          []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: tlsMount, ReadOnly: true}}}},
			Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "router-hosts-mtls"}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// chartServiceAccount is a service account, labelled as the chart labels the operator's when
// labelled is true.
func chartServiceAccount(ns, name string, labelled bool) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if labelled {
		sa.Labels = map[string]string{"app.kubernetes.io/name": "router-hosts-operator"}
	}
	return sa
}

func lease(ns, name, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
}

func secret(ns, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// with changes a Pod in place and returns it, for the table below.
func with(p *corev1.Pod, change func(*corev1.Pod)) *corev1.Pod {
	change(p)
	return p
}

// TestRunningConfig: the running operator is found by its Lease, named or named by its Pods'
// arguments, and its holder is taken only when proven the operator's; its flags are parsed as
// it parsed them, its mTLS material is read from the Secrets mounted where its flags point, and
// what the person sets wins. Every namespace of the table holds the chart's service account.
func TestRunningConfig(t *testing.T) {
	pems := pemFiles(t)
	mtls := secret(opNS, "router-hosts-mtls", pems)
	defaultLease := "router-hosts-operator"
	chartLease := "rho-router-hosts-operator"
	for _, c := range []struct {
		name string
		objs []runtime.Object
		// args and env are the person's command line and environment.
		args []string
		env  map[string]string
		want func(*Config) string // what is wrong, or ""
		err  string               // a part of the error wanted instead
		// note is a part of what the person is told on success, which Pod was used.
		note string
	}{
		{
			name: "the Lease's holder, its flags and its Secret",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-abc_1700000000000000000"), operatorPod(opNS, "rho-abc", chartArgs("homelab", defaultLease)...), mtls},
			want: func(c *Config) string {
				switch {
				case c.Endpoint != "router.lan:50051" || c.ClusterName != "homelab" || !slices.Equal(c.Sources, []string{"ingress", "hostmapping"}):
					return "not the Pod's connection, cluster or sources"
				case c.LeaderElectionNS != opNS || c.LeaderElectionID != defaultLease || c.ConfigName != "default":
					return "not the Pod's Lease or RouterHostsConfig, the identity's inputs"
				case len(c.Tenancy.Adopters) != 0:
					return "--adopt-namespace= (none may adopt) was lost"
				case c.Keys == nil || c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != "" || c.Secret != opNS+"/router-hosts-mtls":
					return "the mTLS material is not the Secret's, in memory"
				case c.LogFormat != "text" || c.LeaderElect:
					return "the Pod's process flags (--log-format, --leader-elect) were taken"
				case c.Command != CommandRun:
					return "not the person's command"
				}
				return ""
			},
		},
		{
			name: "the leader, not the first replica",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-b_1"), operatorPod(opNS, "rho-a", chartArgs("a", defaultLease)...),
				with(operatorPod(opNS, "rho-b", chartArgs("b", defaultLease)...), func(p *corev1.Pod) { p.Status.Conditions = nil }), mtls},
			want: func(c *Config) string { return unless(c.ClusterName == "b", "not the holder's flags") },
			note: "using the configuration of pod router-hosts-system/rho-b (leader, Lease router-hosts-system/router-hosts-operator)\n",
		},
		{
			name: "the holder's hostname is its name cut to 63 characters",
			objs: []runtime.Object{lease(opNS, defaultLease, strings.Repeat("x", 63)+"_1"),
				operatorPod(opNS, strings.Repeat("x", 70), chartArgs("long", defaultLease)...), operatorPod(opNS, "rho-a", chartArgs("a", defaultLease)...), mtls},
			want: func(c *Config) string { return unless(c.ClusterName == "long", "not the holder's flags") },
		},
		{
			name: "two installations",
			objs: []runtime.Object{lease("a", defaultLease, "op-a_1"), operatorPod("a", "op-a", chartArgs("a", defaultLease)...),
				lease("b", defaultLease, "op-b_1"), operatorPod("b", "op-b", chartArgs("b", defaultLease)...)},
			err: "2 router-hosts-operator installations found in any namespace: Lease a/router-hosts-operator (Pod op-a), Lease b/router-hosts-operator (Pod op-b); pick one with --leader-election-namespace",
		},
		{
			name: "two installations, one picked",
			objs: []runtime.Object{lease("a", defaultLease, "op-a_1"), operatorPod("a", "op-a", chartArgs("a", defaultLease)...),
				lease("b", defaultLease, "op-b_1"), operatorPod("b", "op-b", chartArgs("b", defaultLease)...), secret("b", "router-hosts-mtls", pems)},
			args: []string{"--leader-election-namespace=b"},
			want: func(c *Config) string { return unless(c.ClusterName == "b" && c.LeaderElectionNS == "b", "not b's") },
		},
		{
			name: "two releases in one namespace, one picked by its Lease",
			objs: []runtime.Object{operatorPod(opNS, "two-0", chartArgs("two", "two-router-hosts-operator")...),
				operatorPod(opNS, "one-0", chartArgs("one", "one-router-hosts-operator")...), mtls,
				lease(opNS, "one-router-hosts-operator", "one-0_1"), lease(opNS, "two-router-hosts-operator", "two-0_1")},
			args: []string{"--leader-election-id=two-router-hosts-operator"},
			want: func(c *Config) string {
				return unless(c.ClusterName == "two" && c.LeaderElectionID == "two-router-hosts-operator", "not two's")
			},
		},
		{
			name: "no Lease (leader election off): a labelled Pod proves nothing",
			objs: []runtime.Object{operatorPod(opNS, "rho-b", chartArgs("running", chartLease)...), mtls},
			err: "no router-hosts-operator found in any namespace (no Lease router-hosts-operator; Pods labelled app.kubernetes.io/name=router-hosts-operator but holding no Lease, " +
				"which proves nothing: router-hosts-system/rho-b); its configuration is taken only from the Pod holding its leader Lease: give --router-hosts-endpoint and --tls-ca, --tls-cert and --tls-key, or --leader-election-namespace",
		},
		{
			name: "a chart's release, found by its label, then its own Lease",
			objs: []runtime.Object{operatorPod(opNS, "rho-b", chartArgs("b", chartLease)...), lease(opNS, chartLease, "rho-b_1"),
				operatorPod(opNS, "rho-a", chartArgs("a", chartLease)...), mtls},
			want: func(c *Config) string { return unless(c.ClusterName == "b", "not the holder of the release's Lease") },
		},
		{
			name: "nothing runs",
			objs: []runtime.Object{mtls},
			args: []string{"--leader-election-namespace=" + opNS},
			err: "no router-hosts-operator found in namespace router-hosts-system (no Lease router-hosts-operator; no Pods labelled app.kubernetes.io/name=router-hosts-operator); " +
				"its configuration is taken only from the Pod holding its leader Lease: give --router-hosts-endpoint and --tls-ca, --tls-cert and --tls-key, or --leader-election-namespace",
		},
		{
			name: "a Lease left behind",
			objs: []runtime.Object{lease(opNS, defaultLease, "gone_1")},
			err:  "no Pod proven to be the router-hosts-operator's in any namespace: Lease router-hosts-system/router-hosts-operator held by gone, a Pod that does not exist; give --router-hosts-endpoint",
		},
		{
			name: "the operator's Pod gone, a tenant's look-alike Running: refused, never the look-alike",
			objs: []runtime.Object{lease(opNS, chartLease, "rho-a_1"), with(operatorPod(opNS, "rho-b", chartArgs("homelab", chartLease)...), func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			}), mtls, operatorPod("tenant", "look-alike", lookAlikeArgs()...)},
			err: "no Pod proven to be the router-hosts-operator's in any namespace: Lease router-hosts-system/rho-router-hosts-operator held by rho-a, a Pod that does not exist",
		},
		{
			name: "the operator's Pod not Running but holding the Lease: its configuration, not the look-alike's",
			objs: []runtime.Object{lease(opNS, chartLease, "rho-a_1"), with(operatorPod(opNS, "rho-a", chartArgs("homelab", chartLease)...), func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			}), mtls, operatorPod("tenant", "look-alike", lookAlikeArgs()...)},
			want: func(c *Config) string {
				return unless(c.ClusterName == "homelab" && c.Endpoint == "router.lan:50051", "not the holder's")
			},
			note: "using the configuration of pod router-hosts-system/rho-a (leader, Lease router-hosts-system/rho-router-hosts-operator)",
		},
		{
			name: "a tenant's own Lease beside the operator's: two candidates, refused",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), operatorPod(opNS, "rho-a", chartArgs("homelab", defaultLease)...), mtls,
				lease("tenant", defaultLease, "look-alike_1"), operatorPod("tenant", "look-alike", lookAlikeArgs()...)},
			err: "2 router-hosts-operator installations found in any namespace: Lease router-hosts-system/router-hosts-operator (Pod rho-a), Lease tenant/router-hosts-operator (Pod look-alike); pick one",
		},
		{
			name: "a tenant's Lease beside the operator's whose Pod is gone: refused",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), mtls,
				lease("tenant", defaultLease, "look-alike_1"), operatorPod("tenant", "look-alike", chartArgs("evil", defaultLease)...)},
			err: "2 router-hosts-operator installations found in any namespace: Lease router-hosts-system/router-hosts-operator (Lease router-hosts-system/router-hosts-operator held by rho-a, a Pod that does not exist), Lease tenant/router-hosts-operator (Pod look-alike)",
		},
		{
			name: "the holder not labelled as the operator's",
			objs: []runtime.Object{lease(opNS, defaultLease, "debug_1"), with(operatorPod(opNS, "debug", chartArgs("homelab", defaultLease)...), func(p *corev1.Pod) { p.Labels = nil }), mtls},
			err:  "held by the Pod router-hosts-system/debug, which is not labelled app.kubernetes.io/name=router-hosts-operator",
		},
		{
			name: "the holder made by no ReplicaSet",
			objs: []runtime.Object{lease(opNS, defaultLease, "debug_1"), with(operatorPod(opNS, "debug", chartArgs("homelab", defaultLease)...), func(p *corev1.Pod) { p.OwnerReferences = nil }), mtls},
			err:  "held by the Pod router-hosts-system/debug, which is not made by a ReplicaSet",
		},
		{
			name: "the holder runs as the default service account",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), with(operatorPod(opNS, "rho-a", chartArgs("homelab", defaultLease)...), func(p *corev1.Pod) { p.Spec.ServiceAccountName = "" }), mtls},
			err:  "which runs as the namespace's default service account, not the operator's",
		},
		{
			name: "the holder's service account not labelled as the chart's",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), chartServiceAccount(opNS, "builder", false),
				with(operatorPod(opNS, "rho-a", chartArgs("homelab", defaultLease)...), func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" }), mtls},
			err: "which runs as the service account builder, which is not labelled app.kubernetes.io/name=router-hosts-operator",
		},
		{
			name: "the holder runs with another Lease",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), operatorPod(opNS, "rho-a", chartArgs("homelab", chartLease)...), mtls},
			args: []string{"--leader-election-namespace=" + opNS},
			err:  "which runs with the Lease rho-router-hosts-operator, not this one",
		},
		{
			name: "the holder leads in another namespace",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), mtls, with(operatorPod(opNS, "rho-a", chartArgs("homelab", defaultLease)...), func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_NAMESPACE", Value: "elsewhere"}}
			})},
			err: "the operator's Pod router-hosts-system/rho-a holds the Lease router-hosts-system/router-hosts-operator but runs with the Lease elsewhere/router-hosts-operator",
		},
		{
			name: "environment variables, literal, from a ConfigMap and expanded; the arguments win",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), mtls,
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: opNS, Name: "settings"}, Data: map[string]string{"cluster": "from-configmap", "policy": "create-only"}},
				with(operatorPod(opNS, "rho-a", "--router-hosts-endpoint=$(ROUTER):50051", "--tls-ca="+tlsMount+"/ca.crt", "--tls-cert="+tlsMount+"/tls.crt",
					"--tls-key="+tlsMount+"/tls.key", "--policy=upsert-only"), func(p *corev1.Pod) {
					c := &p.Spec.Containers[0]
					c.Env = append(c.Env,
						corev1.EnvVar{Name: "ROUTER", Value: "router.lan"},
						corev1.EnvVar{Name: "ROUTER_HOSTS_OPERATOR_DOMAIN_FILTER", Value: "home.arpa\nlan\n"},
						corev1.EnvVar{Name: "ROUTER_HOSTS_OPERATOR_EXTERNAL_DNS_ANNOTATIONS", Value: "true"},
						corev1.EnvVar{Name: "ROUTER_HOSTS_OPERATOR_CLUSTER_NAME", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "cluster"}}},
						corev1.EnvVar{Name: "ROUTER_HOSTS_OPERATOR_POLICY", Value: "create-only"})
					c.EnvFrom = []corev1.EnvFromSource{{Prefix: "ROUTER_HOSTS_OPERATOR_", ConfigMapRef: &corev1.ConfigMapEnvSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
				})},
			want: func(c *Config) string {
				switch {
				case c.Endpoint != "router.lan:50051":
					return "$(ROUTER) not expanded"
				case !slices.Equal(c.DomainFilter, []string{"home.arpa", "lan"}) || !c.OptIn.ExternalDNSAnnotations:
					return "the literal twins were lost"
				case c.ClusterName != "from-configmap":
					return "the ConfigMap's twin was lost"
				case c.Policy != "upsert-only":
					return "the environment won over the arguments"
				}
				return ""
			},
		},
		{
			name: "what the person sets wins: the command line and the environment",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), operatorPod(opNS, "rho-a", append(chartArgs("homelab", defaultLease), "--interval=1m")...), mtls},
			args: []string{"--cluster-name=mine", "--source=service", "--context=lab", "--log-level=debug"},
			env:  map[string]string{"ROUTER_HOSTS_OPERATOR_INTERVAL": "5m"},
			want: func(c *Config) string {
				switch {
				case c.ClusterName != "mine" || !slices.Equal(c.Sources, []string{"service"}) || c.Interval != 5*time.Minute:
					return "the person's flags lost"
				case c.KubeContext != "lab" || c.LogLevel != "debug":
					return "the person's local flags lost"
				case c.Endpoint != "router.lan:50051" || c.Keys == nil:
					return "what the person left out is not the Pod's"
				}
				return ""
			},
		},
		{
			name: "list's --namespace picks entries; the Pod's --namespace stays what is read",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), operatorPod(opNS, "rho-a", append(chartArgs("homelab", defaultLease), "--namespace=apps")...), mtls},
			args: []string{"list", "--namespace", "tools", "--owner=this"},
			want: func(c *Config) string {
				return unless(c.Command == CommandList && c.Namespace == "apps" && c.Filter.Namespace == "tools" && c.Filter.Owner == "this",
					fmt.Sprintf("read %q, filter %+v", c.Namespace, c.Filter))
			},
		},
		{
			name: "the person's own mTLS files",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), operatorPod(opNS, "rho-a", chartArgs("homelab", defaultLease)...)},
			args: []string{"--tls-ca=ca.pem", "--tls-cert=me.pem", "--tls-key=me.key"},
			want: func(c *Config) string {
				return unless(c.TLSCA == "ca.pem" && c.TLSKey == "me.key" && c.Keys == nil, "not the person's files")
			},
		},
		{
			name: "a projected volume, items renamed, the CA from a ConfigMap, a file mounted by subPath",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"),
				secret(opNS, "client", map[string][]byte{"tls.crt": pems["tls.crt"], "tls.key": pems["tls.key"]}),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: opNS, Name: "bundle"}, Data: map[string]string{"ca.crt": string(pems["ca.crt"])}},
				with(operatorPod(opNS, "rho-a", "--router-hosts-endpoint=router.lan:50051", "--tls-ca=/ca/root.pem",
					"--tls-cert=/etc/rh/client.crt", "--tls-key=/etc/rh/client.key"), func(p *corev1.Pod) {
					p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "rh", MountPath: "/etc/rh"}, {Name: "rh", MountPath: "/ca/root.pem", SubPath: "ca/root.pem"}}
					p.Spec.Volumes = []corev1.Volume{{Name: "rh", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
						{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "client"},
							Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "client.crt"}, {Key: "tls.key", Path: "client.key"}}}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "bundle"},
							Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca/root.pem"}}}},
					}}}}}
				})},
			want: func(c *Config) string {
				return unless(c.Keys != nil && c.TLSCA == "" && c.Secret == opNS+"/client", "the material is not the projected volume's")
			},
		},
		{
			name: "a volume the apiserver does not hold",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"),
				with(operatorPod(opNS, "rho-a", chartArgs("homelab", defaultLease)...), func(p *corev1.Pod) {
					p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io"}}
				})},
			err: "--tls-ca /etc/router-hosts/tls/ca.crt: it is on the volume tls, which is no Secret, ConfigMap or projected volume: not readable through the apiserver; give --tls-ca, --tls-cert and --tls-key from files on this machine",
		},
		{
			name: "a Secret without the key",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), operatorPod(opNS, "rho-a", chartArgs("homelab", defaultLease)...),
				secret(opNS, "router-hosts-mtls", map[string][]byte{"ca.crt": pems["ca.crt"]})},
			err: "the Secret router-hosts-system/router-hosts-mtls has no tls.crt",
		},
		{
			name: "the connection from the RouterHostsConfig: no files, no Secret read",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), operatorPod(opNS, "rho-a", "--config-name=homelab", "--cluster-name=homelab")},
			want: func(c *Config) string {
				return unless(c.ConfigName == "homelab" && c.Keys == nil && c.TLSCA == "" && c.Endpoint == "", "not the Pod's RouterHostsConfig alone")
			},
		},
		{
			name: "a Lease namespace from a literal POD_NAMESPACE and a command",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), mtls, with(operatorPod(opNS, "rho-a", chartArgs("homelab", defaultLease)...), func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.Command, c.Args = append([]string{"/router-hosts-operator", "run"}, c.Args[:2]...), c.Args[2:]
				c.Env = []corev1.EnvVar{{Name: "POD_NAMESPACE", Value: opNS}}
			})},
			want: func(c *Config) string {
				return unless(c.LeaderElectionNS == opNS && slices.Equal(c.Sources, []string{"ingress", "hostmapping"}), "not the Pod's")
			},
		},
		{
			name: "the webhook is not the operator",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), operatorPod(opNS, "rho-a", append([]string{"webhook"}, chartArgs("homelab", defaultLease)...)...)},
			err:  "the operator's Pod router-hosts-system/rho-a: it runs the webhook command, not the operator",
		},
		{
			name: "a flag this binary does not know",
			objs: []runtime.Object{lease(opNS, defaultLease, "rho-a_1"), operatorPod(opNS, "rho-a", "--from-the-future")},
			err:  "is this binary of the operator's version? the Pod runs ghcr.io/router-hosts-operator/router-hosts-operator:v0.1.0",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"KUBECONFIG", "POD_NAMESPACE", "ROUTER_HOSTS_OPERATOR_INTERVAL"} {
				t.Setenv(k, "")
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			given, err := ParseFlags(c.args, Build{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			objs := append([]runtime.Object{chartServiceAccount(opNS, chartSA, true), chartServiceAccount("a", chartSA, true),
				chartServiceAccount("b", chartSA, true), chartServiceAccount("tenant", chartSA, true)}, c.objs...)
			cs := fake.NewClientset(objs...)
			var note bytes.Buffer
			cfg, err := runningConfig(context.Background(), kubeReader{leases: clientset.Leases(cs), pods: clientset.Pods(cs), serviceAccounts: clientset.ServiceAccounts(cs), secrets: clientset.Secrets(cs), configMaps: clientset.ConfigMaps(cs)}, given, &note)
			if c.err == "" && err == nil {
				want := c.note
				if want == "" {
					want = "using the configuration of pod "
				}
				if !strings.Contains(note.String(), want) {
					t.Errorf("told %q, want %q", note.String(), want)
				}
			}
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one with %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err == "":
				if why := c.want(cfg); why != "" {
					t.Errorf("%s: %+v", why, cfg)
				}
			}
		})
	}
}

func unless(ok bool, why string) string {
	if ok {
		return ""
	}
	return why
}

// TestExpand: $(VAR) as the kubelet expands it.
func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "EMPTY": ""}
	lookup := func(n string) (string, bool, error) { v, ok := vars[n]; return v, ok, nil }
	for in, want := range map[string]string{
		"plain": "plain", "$(A)": "x", "a-$(A)-b": "a-x-b", "$(EMPTY)": "", "$(UNSET)": "$(UNSET)",
		"$$(A)": "$(A)", "$": "$", "$(A": "$(A", "cost $5": "cost $5",
	} {
		if got, _ := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}
