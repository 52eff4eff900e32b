// Package kubetest runs a real kube-apiserver and etcd for integration tests and the demo,
// through controller-runtime's envtest. The binaries are built from source by
// hack/envtest-assets.sh; a missing binary is an error, never a silent skip.
package kubetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running apiserver and etcd.
type ControlPlane struct {
	env *envtest.Environment
	// certDir holds the apiserver's certificates; it is ours, not envtest's, so that they
	// survive a restart of the apiserver (RestartAPIServer).
	certDir string
	// Config authenticates as a cluster admin.
	Config *rest.Config
	// Client is a clientset on Config.
	Client kubernetes.Interface
}

// AssetsDir finds the binaries: $KUBEBUILDER_ASSETS, else the cache hack/envtest-assets.sh
// fills under the module root.
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, checkAssets(d)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	matches, _ := filepath.Glob(filepath.Join(root, ".cache", "envtest", "*"))
	for _, d := range matches {
		if checkAssets(d) == nil {
			return d, nil
		}
	}
	return "", errors.New("no kube-apiserver/etcd binaries: run hack/envtest-assets.sh (make test does) or set KUBEBUILDER_ASSETS")
}

func checkAssets(d string) error {
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(d, b)); err != nil {
			return fmt.Errorf("control-plane binary %s: %w", b, err)
		}
	}
	return nil
}

// Start runs a control plane, installing the CRDs found in crdDirs (none is fine).
func Start(crdDirs ...string) (*ControlPlane, error) {
	dir, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "kubetest-apiserver-")
	if err != nil {
		return nil, fmt.Errorf("apiserver directory: %w", err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir, CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: len(crdDirs) > 0}
	env.ControlPlane.GetAPIServer().CertDir = certDir
	// An apiserver (or etcd) that has not drained its watches in this time is killed: a
	// restart in a test is a crash, not a rolling upgrade (StopAPIServer).
	env.ControlPlaneStopTimeout = apiServerStopTimeout
	// The Service range of a kubeadm cluster, room for the bench's thousands of Services
	// (envtest's default holds a few hundred).
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/12")
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", dir, err)
	}
	// Tests create objects quickly; the default client-side limits would slow them down.
	cfg.QPS, cfg.Burst = 500, 1000
	// Deprecation warnings (spec.externalIPs) are noise in test and demo output.
	cfg.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return &ControlPlane{env: env, certDir: certDir, Config: cfg, Client: client}, nil
}

// Stop ends both processes.
func (cp *ControlPlane) Stop() error {
	defer os.RemoveAll(cp.certDir)
	if err := cp.env.Stop(); err != nil {
		return fmt.Errorf("stopping control plane: %w", err)
	}
	return nil
}

// apiServerStopTimeout is how long the apiserver and etcd get to drain on SIGTERM before SIGKILL.
const apiServerStopTimeout = 2 * time.Second

// StopAPIServer stops the kube-apiserver as an upgrade or a crash does, etcd left running:
// SIGTERM, and SIGKILL if it has not drained its watches in two seconds. StartAPIServer
// brings it back on the same address with the same certificates, so every client and
// kubeconfig made before works again.
func (cp *ControlPlane) StopAPIServer() error {
	api := cp.env.ControlPlane.GetAPIServer()
	err := api.Stop()
	// envtest reports the SIGKILL after the timeout as an error: the apiserver was killed,
	// which is what a crash does.
	if err != nil && !strings.Contains(err.Error(), "timeout waiting for process") {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	// Until its port is free, the apiserver (killed or not) is still going.
	addr := net.JoinHostPort(api.SecureServing.Address, api.SecureServing.Port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver still listens on %s after it was stopped", addr)
		}
	}
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped and waits until it serves.
func (cp *ControlPlane) StartAPIServer() error {
	if err := cp.env.ControlPlane.GetAPIServer().Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// WriteKubeconfig writes an admin kubeconfig to path, for running the operator binary.
func (cp *ControlPlane) WriteKubeconfig(path string) error {
	user, err := cp.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding kubeconfig user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// InstallCRDs installs the CRDs in the given files or directories and waits until the
// apiserver serves them, as `kubectl apply` followed by a wait would.
func (cp *ControlPlane) InstallCRDs(paths ...string) error {
	if _, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing CRDs from %v: %w", paths, err)
	}
	return nil
}

// Kubectl finds the kubectl that hack/envtest-assets.sh built beside the control plane.
func Kubectl() (string, error) {
	dir, err := AssetsDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("kubectl: %w (run hack/envtest-assets.sh)", err)
	}
	return p, nil
}

// Kustomize renders a kustomization directory with `kubectl kustomize`.
func Kustomize(dir string) ([]byte, error) {
	kubectl, err := Kubectl()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, ee.Stderr)
		}
		return nil, fmt.Errorf("kubectl kustomize %s: %w", dir, err)
	}
	return out, nil
}

// GatewayAPIVersion is the Gateway API release whose standard-channel CRDs the tests and the
// demo install, from its own module on the Go module proxy.
const GatewayAPIVersion = "v1.6.3"

// InstallGatewayAPI installs the Gateway API's standard CRDs for the route kinds the operator
// reads, and Gateways, from sigs.k8s.io/gateway-api (downloaded into the module cache).
func (cp *ControlPlane) InstallGatewayAPI() error {
	dir, err := moduleDir("sigs.k8s.io/gateway-api@" + GatewayAPIVersion)
	if err != nil {
		return err
	}
	var files []string
	for _, r := range []string{"gateways", "httproutes", "grpcroutes", "tlsroutes"} {
		files = append(files, filepath.Join(dir, "config", "crd", "standard", "gateway.networking.k8s.io_"+r+".yaml"))
	}
	return cp.InstallCRDs(files...)
}

// PrometheusOperatorVersion is the Prometheus Operator release whose ServiceMonitor CRD the
// chart tests install, from its own module on the Go module proxy.
const PrometheusOperatorVersion = "v0.85.0"

// InstallServiceMonitorCRD installs the Prometheus Operator's ServiceMonitor CRD, which the
// Helm chart renders an object of, from github.com/prometheus-operator/prometheus-operator.
func (cp *ControlPlane) InstallServiceMonitorCRD() error {
	dir, err := moduleDir("github.com/prometheus-operator/prometheus-operator@" + PrometheusOperatorVersion)
	if err != nil {
		return err
	}
	return cp.InstallCRDs(filepath.Join(dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_servicemonitors.yaml"))
}

// CertManagerVersion is the cert-manager release whose CRDs the tests install, from its own
// module on the Go module proxy.
const CertManagerVersion = "v1.21.2"

// InstallCertManagerCRDs installs cert-manager's Issuer and Certificate CRDs, for the example
// that issues the operator's client certificate, from github.com/cert-manager/cert-manager.
func (cp *ControlPlane) InstallCertManagerCRDs() error {
	dir, err := moduleDir("github.com/cert-manager/cert-manager@" + CertManagerVersion)
	if err != nil {
		return err
	}
	crds := filepath.Join(dir, "deploy", "crds")
	return cp.InstallCRDs(filepath.Join(crds, "cert-manager.io_issuers.yaml"), filepath.Join(crds, "cert-manager.io_certificates.yaml"))
}

// moduleDir downloads a module version into the module cache and returns its directory.
func moduleDir(modVersion string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", modVersion).Output()
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", modVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download printed %s: %v", out, err)
	}
	return mod.Dir, nil
}
