package kubetest

import (
	"context"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStart proves the harness brings up a working apiserver: the default namespace exists,
// and a kubeconfig for subprocesses is written.
func TestStart(t *testing.T) {
	cp, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := cp.Client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace default: %v", err)
	}
	if err := cp.WriteKubeconfig(filepath.Join(t.TempDir(), "kubeconfig")); err != nil {
		t.Fatal(err)
	}
}
