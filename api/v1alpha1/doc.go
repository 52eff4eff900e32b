// Package v1alpha1 is the router-hosts.fzymgc.house/v1alpha1 API: the HostMapping and the
// RouterHostsConfig. The Go types are the one source of the API: controller-gen (make generate)
// writes their DeepCopy (zz_generated.deepcopy.go) and both CRDs (kustomize/crds/ and the
// chart's crds/) from them and from the markers on them, and a test fails when those files are
// older than the types.
//
// +kubebuilder:object:generate=true
// +groupName=router-hosts.fzymgc.house
package v1alpha1
