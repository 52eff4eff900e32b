package operator

import (
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/explain"
	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// Config is everything the command line says. Every flag also reads
// ROUTER_HOSTS_OPERATOR_<FLAG_IN_CAPS>, so a Deployment can be configured either way.
type Config struct {
	// Settings are what the flags say of the settings a RouterHostsConfig may also set, in
	// their one typed home: the flags fill them, validate completes them (the IP resolution
	// chain, the tenancy), and a RouterHostsConfig's fields are laid over them
	// (clusterconfig.Overlay).
	clusterconfig.Settings
	// Remote is --context and --from-cluster, for the commands an admin runs from a laptop.
	Remote

	Sources              []string
	Provider             string
	TLSCA                string
	TLSCert              string
	TLSKey               string
	MinEventSyncInterval time.Duration
	WriteConcurrency     int
	RequestTimeout       time.Duration
	Once                 bool
	DryRun               bool
	Namespace            string
	LabelFilter          string
	DNSServers           []string
	Kubeconfig           string
	KubeAPIQPS           float32
	KubeAPIBurst         int
	LogLevel             string
	LogFormat            string
	MetricsAddress       string
	LeaderElect          bool
	LeaderElectionNS     string
	LeaderElectionID     string
	ConfigName           string
	WebhookAddress       string
	ProbeWait            time.Duration
	// Force lets release go ahead where it cannot know whether the cluster's operator runs.
	Force bool
	// ServiceAccountTokenFile is the pod's service-account token, whose service account gives
	// the webhook its identity when --cluster-id does not.
	ServiceAccountTokenFile string
	// Command is the subcommand: "run" (the operator, the default), "webhook", "release",
	// "explain" or "list".
	Command string
	// Targets are what explain is asked about: names, or objects as KIND/NAMESPACE/NAME;
	// Output is explain's and list's format, text or json; Filter picks list's entries.
	Targets []string
	Output  string
	Filter  explain.Filter
	// Plan is what the plan command reads: the manifests and how to lay them over the cluster.
	Plan PlanFlags

	// Version is the binary's version, for the user agent and the start-up log; Build all
	// the binary knows of its build.
	Version string
	Build   Build

	// What the flags say as written, which validate turns into Settings: --ip-resolution,
	// --policy, --namespace-domains, --adopt-namespace and --max-grace-period.
	ipResolution     []string
	policy           string
	namespaceDomains []string
	adoptNamespaces  []string
	maxGracePeriod   time.Duration
	domains          endpoint.DomainFilter
}

// The subcommands.
const (
	CommandRun     = "run"
	CommandWebhook = "webhook"
	// WebhookCluster is the webhook's cluster name unless --cluster-name says otherwise.
	WebhookCluster = "external-dns"
	// WebhookMetricsAddress is where the webhook serves /metrics, /healthz, /readyz and /routerz unless
	// --metrics-address says otherwise: external-dns's webhook providers use port 8080, and
	// its chart probes the sidecar there.
	WebhookMetricsAddress = ":8080"
	// DefaultServiceAccountTokenFile is where Kubernetes mounts a pod's service-account token,
	// in every container of the pod.
	DefaultServiceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
)

// envPrefix starts every flag's environment variable (kingpin's DefaultEnvars for the app's name).
const envPrefix = "ROUTER_HOSTS_OPERATOR_"

// ParseFlags reads args and the environment; an invalid value fails with the flag's name.
func ParseFlags(args []string, build Build) (*Config, error) {
	cfg := &Config{Version: build.Version, Build: build}
	cfg.args = args // RunningConfig lays what they set over the running operator's flags
	app := newApp(cfg, build, os.Getenv)
	// given reports whether the user set a flag, on the command line or by its environment
	// twin, so that the webhook command can choose defaults of its own for the others.
	set := map[string]*bool{"cluster-name": new(bool), "metrics-address": new(bool), "max-entries-per-namespace": new(bool), "max-namespace-writes-per-minute": new(bool)}
	for name, b := range set {
		app.GetFlag(name).IsSetByUser(b)
	}
	if err := asProgram(app, os.Args[0]); err != nil {
		return nil, err
	}
	given := func(flag string) bool {
		_, env := os.LookupEnv(envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_")))
		return *set[flag] || env
	}
	cmd, err := app.Parse(stdinFiles(args))
	if err != nil {
		return nil, err
	}
	cfg.Command = cmd
	if cmd == CommandRelease {
		if err := cfg.releaseFlags(given("cluster-name")); err != nil {
			return nil, err
		}
	}
	if cmd == CommandExplain || cmd == CommandList {
		if err := cfg.readOnlyFlags(); err != nil {
			return nil, err
		}
		if cfg.Output == "markdown" {
			return nil, fmt.Errorf("--output=markdown: %s writes text or json; markdown is plan's", cmd)
		}
	}
	if cmd == CommandPlan {
		if err := cfg.planFlags(); err != nil {
			return nil, err
		}
	}
	if cmd == CommandWebhook {
		// A cluster name apart from any operator's: with one name, each sees the other as a
		// namesake, which it reports and for which it leaves its earlier entries alone.
		if !given("cluster-name") {
			cfg.ClusterName = WebhookCluster
		}
		cfg.ConfigName = "" // the RouterHostsConfig configures the operator, not the webhook
		// A sidecar shares the pod's network with external-dns, whose own metrics take :7979.
		if !given("metrics-address") {
			cfg.MetricsAddress = WebhookMetricsAddress
		}
		// Every record external-dns holds is in the webhook's one namespace, which is no
		// tenant: its budgets would cap external-dns at a thousand names, and all of them at
		// the pace of one namespace.
		if !given("max-entries-per-namespace") {
			cfg.Budgets.EntriesPerNamespace = 0
		}
		if !given("max-namespace-writes-per-minute") {
			cfg.Budgets.NamespaceWritesPerMinute = 0
		}
	}
	return cfg, cfg.validate()
}

// stdinFiles spells `-f -` as --filename=-: kingpin reads a lone "-" as an empty value, and "-"
// is how kubectl names stdin.
func stdinFiles(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if (args[i] == "-f" || args[i] == "--filename") && i+1 < len(args) && args[i+1] == "-" {
			out = append(out, "--filename=-")
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// FlagModel is kingpin's model of the command line, for the flag table of the docs: every
// command and flag with its help, default and environment variable. Its defaults do not depend on
// the environment it is built in (KUBECONFIG and POD_NAMESPACE read as unset), so that the
// table is the same on every machine.
func FlagModel() (*kingpin.ApplicationModel, error) {
	app := newApp(&Config{}, Build{}, func(string) string { return "" })
	// The environment variables are named when kingpin initialises the application, which
	// ParseContext does without reading the environment or setting a value.
	if _, err := app.ParseContext(nil); err != nil {
		return nil, fmt.Errorf("initialising the command line's model: %w", err)
	}
	return app.Model(), nil
}

// newApp declares the commands and flags, kingpin's model of the command line (the flag table
// of docs/configuration.md is rendered from it); getenv supplies the defaults read from the
// environment, so that the model can be made independent of the machine it is built on.
func newApp(cfg *Config, build Build, getenv func(string) string) *kingpin.Application {
	app := kingpin.New("router-hosts-operator",
		"Keeps a router-hosts server's host entries in step with annotated Kubernetes resources.")
	app.Version(ProgramName(os.Args[0]) + " " + build.String())
	app.DefaultEnvars()
	app.HelpFlag.NoEnvar()
	app.VersionFlag.NoEnvar()
	app.Flag("source", "Resource kinds to read hostnames from (repeatable): "+source.Help()+".").Default("ingress").SetValue(&enumList{flag: "source", allowed: source.Names(), target: &cfg.Sources})
	app.Flag("provider", "Where entries are written: router-hosts (the server) or inmemory (an in-process store, for trying the operator out).").
		Default("router-hosts").SetValue(&enum{flag: "provider", allowed: []string{"router-hosts", "inmemory"}, target: &cfg.Provider})
	app.Flag("router-hosts-endpoint", "The router-hosts server's gRPC address, host:port; the RouterHostsConfig's spec.server.endpoint wins. With neither, the operator waits for the RouterHostsConfig to name one (--once exits instead).").StringVar(&cfg.Endpoint)
	app.Flag("tls-ca", "CA certificate file that signed the server's certificate; with --tls-cert and --tls-key, re-read when the files change (the RouterHostsConfig's spec.server.tlsSecretRef wins).").StringVar(&cfg.TLSCA)
	app.Flag("tls-cert", "Client certificate file for mTLS (TLS 1.3).").StringVar(&cfg.TLSCert)
	app.Flag("tls-key", "Client private key file for mTLS.").StringVar(&cfg.TLSKey)
	app.Flag("tls-server-name", "Server name to verify in the server's certificate, when it differs from the endpoint's host; unset, the endpoint's host is checked, a DNS name against the certificate's DNS names and an IP address against its IP addresses.").StringVar(&cfg.ServerName)
	app.Flag("cluster-name", "Name written in the cluster:<name> tag; lets several clusters share one server. The webhook command's default is "+WebhookCluster+"; release needs it given.").Default("default").StringVar(&cfg.ClusterName)
	app.Flag("cluster-id", "The installation's identity, "+strconv.Itoa(registry.IdentityLength)+" hex digits written in a tag of its own beside the cluster's name (cluster-id:<id>), so that a namesake's entries are never taken for this cluster's and a rename keeps them (default: derived from the kube-system namespace's UID and the leader Lease's namespace and name; the webhook derives it from its service account's UID, read from --service-account-token-file, and release reads it from the name's entries on the router).").
		StringVar(&cfg.ClusterID)
	brake := registry.DefaultBrake()
	app.Flag("mass-deletion-percent", "Brake: when more than this percent of the cluster's entries would be on their way out at once (and at least --mass-deletion-minimum), nothing is marked or deleted until the deletion is confirmed or its cause goes away (0: no brake).").
		Default(strconv.Itoa(int(brake.Share * 100))).SetValue(&percent{flag: "mass-deletion-percent", zero: "no brake", target: &cfg.Brake.Share})
	app.Flag("mass-deletion-minimum", "Brake: the fewest entries on their way out that can trip it.").
		Default(strconv.Itoa(brake.Minimum)).SetValue(&integer{flag: "mass-deletion-minimum", target: &cfg.Brake.Minimum})
	app.Flag("mass-deletion-namespace-percent", "Brake: the same for each namespace on its own: when more than this percent of one namespace's entries would be on their way out at once (and at least --mass-deletion-namespace-minimum), nothing of that namespace is marked or deleted, and no new name of it is written, until the deletion is confirmed or its cause goes away (0: no namespace's brake).").
		Default(strconv.Itoa(int(brake.NamespaceShare * 100))).SetValue(&percent{flag: "mass-deletion-namespace-percent", zero: "no namespace's brake", target: &cfg.Brake.NamespaceShare})
	app.Flag("mass-deletion-namespace-minimum", "Brake: the fewest entries of one namespace on their way out that can trip its brake.").
		Default(strconv.Itoa(brake.NamespaceMinimum)).SetValue(&integer{flag: "mass-deletion-namespace-minimum", target: &cfg.Brake.NamespaceMinimum})
	app.Flag("confirm-mass-deletion", "Let the held mass deletion with this token through (the MassDeletionHeld warning names it).").
		StringVar(&cfg.Brake.Confirm)
	app.Flag("ip-resolution", "Ordered IP resolution chain (repeatable): ingress-status, gateway-status, service:<namespace>/<name>, static:<ip>; Gateway API routes try gateway-status first unless it is placed.").
		Default("ingress-status").StringsVar(&cfg.ipResolution)
	app.Flag("silent-cluster-after", "This installation's silence threshold: it renews its heartbeat every quarter of it, one write, and the heartbeat carries that period, so the others report it silent (a SilentCluster warning, the silent_clusters metric, a log line with the release command) once its newest heartbeat is older than this; an earlier version's heartbeat, which carries none, is read against it. Nothing is deleted for it (0: no heartbeat, no report).").
		Default("168h").SetValue(&duration{flag: "silent-cluster-after", target: &cfg.SilentClusterAfter})
	app.Flag("compact-own-entries", "Fold the router's event log of each entry this installation alone owns once it passes "+strconv.Itoa(registry.DefaultCompactAbove)+" events, and of each it deleted, after the sync's writes (CompactAggregates by ID, at most 10 a sync, each one write of the write-rate budgets); the entry and its version stay as they are. A server before 0.10.7, or a certificate without the right, is said once and the syncs go on (the RouterHostsConfig's spec.server.compactOwnEntries wins; on by default, --no-compact-own-entries turns it off).").
		Default("true").BoolVar(&cfg.CompactOwnEntries)
	app.Flag("grace-period", "How long an entry whose address is no longer wanted stays, marked, before it is deleted or, if adopted, given back; an object's grace-period annotation replaces it for that object.").
		Default("5m").SetValue(&duration{flag: "grace-period", target: &cfg.GracePeriod})
	app.Flag("default-tag", "Tag added to every entry the operator creates (repeatable); the operator's reserved tags are refused.").StringsVar(&cfg.DefaultTags)
	app.Flag("policy", "sync (create, update, delete), upsert-only (never mark, delete or give back) or create-only (never write an existing entry: no update, unmark or adoption).").Default("sync").SetValue(&enum{flag: "policy", allowed: []string{"sync", "upsert-only", "create-only"}, target: &cfg.policy})
	app.Flag("interval", "Period of full resyncs.").Default("1m").SetValue(&duration{flag: "interval", target: &cfg.Interval})
	app.Flag("min-event-sync-interval", "Least time between the starts of event-triggered syncs.").Default("1s").SetValue(&duration{flag: "min-event-sync-interval", target: &cfg.MinEventSyncInterval})
	app.Flag("write-concurrency", "Writes sent to the server in parallel.").Default("4").SetValue(&integer{flag: "write-concurrency", target: &cfg.WriteConcurrency})
	app.Flag("request-timeout", "Deadline of each router-hosts call; ListHosts and SearchHosts, which stream entries, get three times as long.").Default("10s").SetValue(&duration{flag: "request-timeout", target: &cfg.RequestTimeout})
	app.Flag("once", "Run one sync and exit: 0 on success, 1 on failure (run command).").BoolVar(&cfg.Once)
	app.Flag("dry-run", "Print the plan, one line per change and one per change held back with the stage and the reason, and write nothing (run and release commands).").BoolVar(&cfg.DryRun)
	app.Flag("domain-filter", "Only manage hostnames equal to or under this domain (repeatable) (default: all).").StringsVar(&cfg.DomainFilter)
	app.Flag("exclude-domains", "Never manage hostnames equal to or under this domain (repeatable).").StringsVar(&cfg.ExcludeDomains)
	app.Flag("ingress-class", "Manage every Ingress of this ingress class (repeatable; spec.ingressClassName or the legacy kubernetes.io/ingress.class annotation) without its annotation; router-hosts.fzymgc.house/enabled: \"false\" opts one out.").
		StringsVar(&cfg.OptIn.IngressClasses)
	app.Flag("gateway-name", "Manage every route attached to this Gateway, namespace/name (repeatable), without annotations; router-hosts.fzymgc.house/enabled: \"false\" on a route opts it out.").
		StringsVar(&cfg.OptIn.GatewayNames)
	app.Flag("external-dns-annotations", "Also read external-dns's annotations: external-dns.alpha.kubernetes.io/hostname opts an object in with those hostnames, external-dns.alpha.kubernetes.io/target gives its addresses (IPs, or hostnames resolved by DNS); the operator's own ip-address annotation wins.").
		BoolVar(&cfg.OptIn.ExternalDNSAnnotations)
	app.Flag("dns-server", "DNS server, host:port, that resolves hostnames given where an address is wanted (a load balancer that reports only a hostname, a target annotation) (repeatable: asked in turn, each for up to 5 s, two rounds; default: the nameservers of /etc/resolv.conf, with its timeout and attempts options).").
		StringsVar(&cfg.DNSServers)
	app.Flag("verify-dns", "The router's DNS server, host:port, asked for every name the operator writes to check that it answers as written: a grace after each write and once per --interval, spread; a name that does not is reported (metric, NotAnswering event, the HostMapping's Answering condition) (the RouterHostsConfig's spec.server.verifyDNS wins; default: off).").
		StringVar(&cfg.VerifyDNS)
	budgets := registry.DefaultBudgets()
	app.Flag("namespace-domains", "NAMESPACE=DOMAIN[,DOMAIN...] (repeatable): when given, namespaces may claim only names (hostnames and aliases) under the domains listed for them; NAMESPACE may be a pattern such as team-* or *.").
		StringsVar(&cfg.namespaceDomains)
	app.Flag("adopt-namespace", "Namespace, or pattern, whose objects may adopt hand-made entries (repeatable); given once empty, none may. A hand-made entry tagged no-adopt is never adopted.").
		Default("*").StringsVar(&cfg.adoptNamespaces)
	app.Flag("max-grace-period", "The longest grace period an object may ask for (its annotation is capped) or an entry may carry; 0 lifts the cap.").
		Default("8760h").SetValue(&duration{flag: "max-grace-period", target: &cfg.maxGracePeriod})
	app.Flag("max-entries-per-object", "Budget: an object's hostnames times their addresses; an object over any budget keeps the entries it has and gets no new ones (0: no limit).").
		Default(strconv.Itoa(budgets.EntriesPerObject)).SetValue(&integer{flag: "max-entries-per-object", target: &cfg.Budgets.EntriesPerObject})
	app.Flag("max-aliases-per-object", "Budget: the aliases an object asks for, over all its hostnames (0: no limit).").
		Default(strconv.Itoa(budgets.AliasesPerObject)).SetValue(&integer{flag: "max-aliases-per-object", target: &cfg.Budgets.AliasesPerObject})
	app.Flag("max-tags-per-object", "Budget: the tags an object asks for (0: no limit).").
		Default(strconv.Itoa(budgets.TagsPerObject)).SetValue(&integer{flag: "max-tags-per-object", target: &cfg.Budgets.TagsPerObject})
	app.Flag("max-entries-per-namespace", "Budget: the entries of one namespace; beyond it, its new hostnames are not written (0: no limit; the webhook command's default is 0, its one namespace being no tenant).").
		Default(strconv.Itoa(budgets.EntriesPerNamespace)).SetValue(&integer{flag: "max-entries-per-namespace", target: &cfg.Budgets.EntriesPerNamespace})
	app.Flag("max-writes-per-sync", "Budget: the writes of one sync; the rest follow in the next sync, at once, every namespace and object taking turns (0: no limit).").
		Default(strconv.Itoa(budgets.WritesPerSync)).SetValue(&integer{flag: "max-writes-per-sync", target: &cfg.Budgets.WritesPerSync})
	app.Flag("max-object-writes-per-minute", "Budget: how fast one object writes (every write: marks and deletions too), beyond writing all it asks for at once; an object that changes faster (a flapping address) has its latest state written at this rate, and the states between never (0: no limit).").
		Default(strconv.Itoa(budgets.ObjectWritesPerMinute)).SetValue(&integer{flag: "max-object-writes-per-minute", target: &cfg.Budgets.ObjectWritesPerMinute})
	app.Flag("max-namespace-writes-per-minute", "Budget: how fast one namespace writes, beyond writing all it asks for at once (0: no limit; the webhook command's default is 0, its one namespace being no tenant).").
		Default(strconv.Itoa(budgets.NamespaceWritesPerMinute)).SetValue(&integer{flag: "max-namespace-writes-per-minute", target: &cfg.Budgets.NamespaceWritesPerMinute})
	app.Flag("label-filter", "Only read the objects that carry hostnames whose labels match this selector (applied by the apiserver), e.g. dns=internal; what they point to (Gateways, namespaces, the Services of --ip-resolution) is read whatever its labels.").StringVar(&cfg.LabelFilter)
	app.Flag("namespace", "Only read the objects that carry hostnames in this namespace (default: all); what they point to (Gateways, namespaces, the Services of --ip-resolution) is read wherever it is.").StringVar(&cfg.Namespace)
	app.Flag("kubeconfig", "Kubeconfig file, or a list of them as $KUBECONFIG takes (default: $KUBECONFIG, else the in-cluster config, else ~/.kube/config).").Default(getenv("KUBECONFIG")).StringVar(&cfg.Kubeconfig)
	remoteFlags(app, cfg)
	app.Flag("kube-api-qps", "Requests per second to the Kubernetes API, per client: the informers, the status writer, events and the leader Lease each have one.").
		Default("20").SetValue(&float{flag: "kube-api-qps", target: &cfg.KubeAPIQPS})
	app.Flag("kube-api-burst", "Requests the Kubernetes API may receive at once above --kube-api-qps, per client.").
		Default("50").SetValue(&integer{flag: "kube-api-burst", target: &cfg.KubeAPIBurst})
	app.Flag("metrics-address", "Address of the HTTP server for /metrics, /healthz, /readyz and /routerz; empty disables it. The webhook command's default is "+WebhookMetricsAddress+", external-dns's sidecar convention.").
		Default(":7979").StringVar(&cfg.MetricsAddress)
	app.Flag("leader-elect", "Run with a Lease so that only one of several replicas syncs (run command).").BoolVar(&cfg.LeaderElect)
	app.Flag("leader-election-namespace", "Namespace of the leader Lease (default: the pod's namespace from POD_NAMESPACE, else default).").
		Default(defaultLeaseNamespace(getenv)).StringVar(&cfg.LeaderElectionNS)
	app.Flag("leader-election-id", "Name of the leader Lease.").Default("router-hosts-operator").StringVar(&cfg.LeaderElectionID)
	app.Flag("log-level", "panic, fatal, error, warn, info, debug or trace.").Default("info").SetValue(&enum{flag: "log-level", allowed: []string{"panic", "fatal", "error", "warn", "info", "debug", "trace"}, target: &cfg.LogLevel})
	app.Flag("log-format", "text or json.").Default("text").SetValue(&enum{flag: "log-format", allowed: []string{"text", "json"}, target: &cfg.LogFormat})
	app.Command(CommandRun, "Keep router-hosts in step with the cluster's annotated resources (the default).").Default()
	app.Command(CommandWebhook, "Serve router-hosts as an external-dns webhook provider: external-dns's sources, the operator's ownership, adoption and grace periods. "+
		"Give it a --cluster-name of its own (default there: "+WebhookCluster+"); run external-dns with --provider=webhook --registry=noop.")
	app.Command(CommandRelease, "Let a cluster go for good (gone, or after helm uninstall): give back the entries it adopted as they were and delete the ones it created, "+
		"nothing else; refused while an operator of the cluster still runs. Needs --cluster-name; run it with --dry-run first.")
	explainCmd := app.Command(CommandExplain, "Say why a name is on the router as it is, or is not: each object that claims it and what the operator decided for it and why, each entry with its owner, "+
		"the objects that name it but are never read, and whether the router's DNS answers it. Read-only; exit 0 when every name is on the router as its claims want, 1 when one is not, 2 on an error.")
	explainCmd.Arg("target", "A hostname, or an object as KIND/NAMESPACE/NAME (ingress/default/web).").Required().StringsVar(&cfg.Targets)
	app.Command(CommandList, "Print every entry on the router with its owner (the object, not a UID), its state and whether the router's DNS answers it. Read-only; --namespace, --owner and --state pick entries.")
	app.Command(CommandPlan, "Show what applying manifests would do to the router, before they are applied: each create, update and deletion by object, "+
		"the refusals and holds they cause, the brake's verdict, a summary. Read-only; exit 0 for no change, 1 for changes, 2 on an error, 3 when something is refused or held (docs/plan.md).")
	app.Flag("output", "explain, list and plan: text (for people), json (a stable shape for scripts, docs/explain.md and docs/plan.md) or markdown (plan: a pull-request comment).").Short('o').
		Default("text").SetValue(&enum{flag: "output", allowed: []string{"text", "json", "markdown"}, target: &cfg.Output})
	app.Flag("filename", "plan: the manifests, a file, a folder (its .yaml, .yml and .json files) or - for stdin, multi-document YAML as kustomize build or helm template writes it (repeatable).").
		Short('f').StringsVar(&cfg.Plan.Files)
	app.Flag("prune", "plan: plan the live objects that --selector selects and the manifests lack as deleted, as kubectl apply --prune does.").BoolVar(&cfg.Plan.Prune)
	app.Flag("selector", "plan: the label selector of --prune.").Short('l').StringVar(&cfg.Plan.Selector)
	app.Flag("offline", "plan: read no cluster: the manifests are the whole cluster, and the router's entries come from --router-snapshot (the identity from its entries of --cluster-name, or --cluster-id).").BoolVar(&cfg.Plan.Offline)
	app.Flag("router-snapshot", "plan: read the router's entries from this file, the output of `list -o json` (unfiltered), instead of the router.").StringVar(&cfg.Plan.RouterSnapshot)
	app.Flag("owner", "list: only the entries of this owner: "+strings.Join(explain.Owners(), ", ")+".").StringVar(&cfg.Filter.Owner)
	app.Flag("state", "list: only the entries in this state: "+strings.Join(explain.States(), ", ")+".").StringVar(&cfg.Filter.State)
	app.Flag("force", "release: go ahead where it cannot know whether an operator of the cluster runs (entries written by a version that answers the probe only on entries it rewrites); a running operator that answers the probe still stops it.").
		BoolVar(&cfg.Force)
	app.Flag("probe-wait", "How long release waits for a running operator of the cluster to take its probe off an entry: at least two and a half of that operator's --interval, which release holds to when the cluster's heartbeat says its interval.").
		Default(DefaultProbeWait.String()).SetValue(&duration{flag: "probe-wait", target: &cfg.ProbeWait})
	app.Flag("webhook-address", "Address of the external-dns webhook API (webhook command); the default is external-dns's sidecar convention.").
		Default("127.0.0.1:8888").StringVar(&cfg.WebhookAddress)
	app.Flag("service-account-token-file", "The pod's service-account token (webhook command): the UID of the service account it names gives the webhook its identity unless --cluster-id is given. Every pod has it mounted; without it and --cluster-id the webhook does not start.").
		Default(DefaultServiceAccountTokenFile).StringVar(&cfg.ServiceAccountTokenFile)
	app.Flag("config-name", "Name of the cluster-scoped RouterHostsConfig to read (run command); a field it sets wins over its flag, and a change applies without a restart. Empty: flags only.").
		Default("default").StringVar(&cfg.ConfigName)
	return app
}

// validate checks what kingpin cannot, naming the flag at fault.
func (cfg *Config) validate() error {
	var err error
	cfg.Sources = source.Expand(cfg.Sources)
	if cfg.IPResolution, err = source.ParseIPResolution(cfg.ipResolution); err != nil {
		return fmt.Errorf("--ip-resolution: %w", err)
	}
	if cfg.Policy, err = plan.ParsePolicy(cfg.policy); err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	if cfg.domains, err = endpoint.NewDomainFilter(cfg.DomainFilter, cfg.ExcludeDomains); err != nil {
		return fmt.Errorf("--domain-filter/--exclude-domains: %w", err)
	}
	if cfg.Tenancy, err = parseTenancy(cfg.namespaceDomains, cfg.adoptNamespaces, cfg.maxGracePeriod); err != nil {
		return err
	}
	if _, err := registry.New(cfg.Config); err != nil {
		return fmt.Errorf("--cluster-name, --cluster-id, --default-tag, --grace-period, the tenancy, the budgets or the brake: %w", err)
	}
	if _, err := labels.Parse(cfg.LabelFilter); err != nil {
		return fmt.Errorf("--label-filter: %w", err)
	}
	if err := cfg.OptIn.Check(); err != nil {
		return fmt.Errorf("--ingress-class or --gateway-name: %w", err)
	}
	for _, s := range cfg.DNSServers {
		if host, port, err := net.SplitHostPort(s); err != nil || host == "" || port == "" {
			return fmt.Errorf("--dns-server %q: want host:port", s)
		}
	}
	if cfg.VerifyDNS != "" {
		if err := clusterconfig.CheckHostPort(cfg.VerifyDNS); err != nil {
			return fmt.Errorf("--verify-dns %w", err)
		}
	}
	tlsFiles := 0
	for _, f := range []string{cfg.TLSCA, cfg.TLSCert, cfg.TLSKey} {
		if f != "" {
			tlsFiles++
		}
	}
	// The endpoint and the TLS material may come from the RouterHostsConfig instead; that
	// both come from somewhere is checked once it is read.
	switch {
	case cfg.Provider == "router-hosts" && cfg.ConfigName == "" && cfg.Endpoint == "":
		return fmt.Errorf("--router-hosts-endpoint is required with --provider=router-hosts and no --config-name")
	case tlsFiles != 0 && tlsFiles != 3, cfg.Provider == "router-hosts" && cfg.ConfigName == "" && tlsFiles == 0:
		return fmt.Errorf("--tls-ca, --tls-cert and --tls-key go together and are required without a RouterHostsConfig: router-hosts only speaks mTLS")
	case cfg.GracePeriod < 0:
		return fmt.Errorf("--grace-period must not be negative")
	case cfg.Interval <= 0:
		return fmt.Errorf("--interval must be positive")
	case cfg.MinEventSyncInterval < 0:
		return fmt.Errorf("--min-event-sync-interval must not be negative")
	case cfg.WriteConcurrency < 1:
		return fmt.Errorf("--write-concurrency must be at least 1")
	case cfg.RequestTimeout <= 0:
		return fmt.Errorf("--request-timeout must be positive")
	case !(cfg.KubeAPIQPS > 0) || math.IsInf(float64(cfg.KubeAPIQPS), 0):
		return fmt.Errorf("--kube-api-qps must be a positive number")
	case cfg.KubeAPIBurst < 1:
		return fmt.Errorf("--kube-api-burst must be at least 1")
	}
	return nil
}

// The flag value types below exist so that a bad value's error names its flag, which kingpin's
// built-in enum and duration parsers do not do.

// enum is a flag that takes one of a fixed set of words.
type enum struct {
	flag    string
	allowed []string
	target  *string
}

func (e *enum) Set(v string) error {
	if !slices.Contains(e.allowed, v) {
		return fmt.Errorf("--%s: %q is not one of %s", e.flag, v, strings.Join(e.allowed, ", "))
	}
	*e.target = v
	return nil
}

func (e *enum) String() string { return *e.target }

// enumList is a repeatable enum.
type enumList struct {
	flag    string
	allowed []string
	target  *[]string
}

func (e *enumList) Set(v string) error {
	if !slices.Contains(e.allowed, v) {
		return fmt.Errorf("--%s: %q is not one of %s", e.flag, v, strings.Join(e.allowed, ", "))
	}
	if !slices.Contains(*e.target, v) {
		*e.target = append(*e.target, v)
	}
	return nil
}

func (e *enumList) String() string { return strings.Join(*e.target, ",") }

// IsCumulative tells kingpin the flag may repeat.
func (e *enumList) IsCumulative() bool { return true }

// duration is a Go duration flag ("90s", "5m").
type duration struct {
	flag   string
	target *time.Duration
}

func (d *duration) Set(v string) error {
	x, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("--%s: %q is not a duration such as 30s or 5m", d.flag, v)
	}
	*d.target = x
	return nil
}

func (d *duration) String() string { return d.target.String() }

// integer is a whole-number flag.
type integer struct {
	flag   string
	target *int
}

func (n *integer) Set(v string) error {
	x, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("--%s: %q is not a whole number", n.flag, v)
	}
	*n.target = x
	return nil
}

func (n *integer) String() string { return strconv.Itoa(*n.target) }

// percent is a whole percent, 0 to 100, kept as a share (0 to 1); zero says what 0 means.
type percent struct {
	flag, zero string
	target     *float64
}

func (p *percent) Set(v string) error {
	x, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("--%s: %q is not a whole number", p.flag, v)
	}
	if x < 0 || x > 100 {
		return fmt.Errorf("--%s %d: want 0 (%s) to 100", p.flag, x, p.zero)
	}
	*p.target = float64(x) / 100
	return nil
}

func (p *percent) String() string { return strconv.Itoa(int(math.Round(*p.target * 100))) }

// float is a decimal flag; its range is checked in validate.
type float struct {
	flag   string
	target *float32
}

func (f *float) Set(v string) error {
	x, err := strconv.ParseFloat(v, 32)
	if err != nil {
		return fmt.Errorf("--%s: %q is not a number", f.flag, v)
	}
	*f.target = float32(x)
	return nil
}

func (f *float) String() string { return strconv.FormatFloat(float64(*f.target), 'g', -1, 32) }

// defaultLeaseNamespace is the pod's own namespace when the Deployment passes it down.
func defaultLeaseNamespace(getenv func(string) string) string {
	if ns := getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "default"
}

// settings are what the flags say of the settings a RouterHostsConfig may override.
func (cfg *Config) settings() clusterconfig.Settings {
	s := cfg.Settings
	s.TLSFiles, s.NoServer = cfg.TLSCA != "", cfg.Provider == "inmemory"
	return s
}

// parseTenancy reads --namespace-domains (NAMESPACE=DOMAIN[,DOMAIN...]), --adopt-namespace (an
// empty value stands for none) and --max-grace-period.
func parseTenancy(domains, adopters []string, maxGrace time.Duration) (registry.Tenancy, error) {
	t := registry.Tenancy{MaxGracePeriod: maxGrace, Adopters: []string{}}
	for _, d := range domains {
		ns, list, ok := strings.Cut(d, "=")
		if !ok || strings.TrimSpace(ns) == "" || strings.TrimSpace(list) == "" {
			return registry.Tenancy{}, fmt.Errorf("--namespace-domains %q: want NAMESPACE=DOMAIN[,DOMAIN...]", d)
		}
		nd := registry.NamespaceDomains{Namespace: strings.TrimSpace(ns)}
		for _, dom := range strings.Split(list, ",") {
			if dom = strings.TrimSpace(dom); dom != "" {
				nd.Domains = append(nd.Domains, dom)
			}
		}
		t.Domains = append(t.Domains, nd)
	}
	for _, a := range adopters {
		if a = strings.TrimSpace(a); a != "" {
			t.Adopters = append(t.Adopters, a)
		}
	}
	if maxGrace < 0 {
		return registry.Tenancy{}, fmt.Errorf("--max-grace-period must not be negative")
	}
	if err := t.Check(); err != nil {
		return registry.Tenancy{}, fmt.Errorf("--namespace-domains or --adopt-namespace: %w", err)
	}
	return t, nil
}
