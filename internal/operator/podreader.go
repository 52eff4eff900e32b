package operator

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
)

// podEnv reads the operator container's environment as the kubelet makes it, one variable at a
// time, so that only the Secrets and ConfigMaps behind the variables asked for are read.
type podEnv struct {
	ctx     context.Context
	objects *objects
	pod     *corev1.Pod
	c       *corev1.Container
	// fromSources is what envFrom gives, read at the first variable env does not set.
	fromSources map[string]string
	// resolving guards against a variable whose value refers to itself.
	resolving map[string]bool
}

// lookup is a variable's value: the last env entry of that name (a literal, with $(VAR)
// references expanded, or valueFrom), else envFrom's sources, the later winning.
func (e *podEnv) lookup(name string) (string, bool, error) {
	for i := len(e.c.Env) - 1; i >= 0; i-- {
		v := e.c.Env[i]
		if v.Name != name {
			continue
		}
		if v.ValueFrom == nil {
			if e.resolving[name] {
				return "$(" + name + ")", true, nil
			}
			if e.resolving == nil {
				e.resolving = map[string]bool{}
			}
			e.resolving[name] = true
			defer delete(e.resolving, name)
			x, err := expand(v.Value, e.lookup)
			return x, true, err
		}
		return e.valueFrom(name, v.ValueFrom)
	}
	if e.fromSources == nil {
		if err := e.readSources(); err != nil {
			return "", false, err
		}
	}
	x, ok := e.fromSources[name]
	return x, ok, nil
}

func (e *podEnv) valueFrom(name string, src *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := fieldOf(e.pod, src.FieldRef.FieldPath)
		if err != nil {
			return "", false, fmt.Errorf("%s: %w", name, err)
		}
		return v, true, nil
	case src.SecretKeyRef != nil:
		r := src.SecretKeyRef
		s, err := e.objects.secret(e.ctx, r.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && r.Optional != nil && *r.Optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("%s: %w", name, err)
		}
		v, ok := s.Data[r.Key]
		if !ok && (r.Optional == nil || !*r.Optional) {
			return "", false, fmt.Errorf("%s: the Secret %s/%s has no %s", name, s.Namespace, s.Name, r.Key)
		}
		return string(v), ok, nil
	case src.ConfigMapKeyRef != nil:
		r := src.ConfigMapKeyRef
		cm, err := e.objects.configMap(e.ctx, r.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && r.Optional != nil && *r.Optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("%s: %w", name, err)
		}
		v, ok := cm.Data[r.Key]
		if !ok && (r.Optional == nil || !*r.Optional) {
			return "", false, fmt.Errorf("%s: the ConfigMap %s/%s has no %s", name, cm.Namespace, cm.Name, r.Key)
		}
		return v, ok, nil
	}
	return "", false, fmt.Errorf("%s: its value comes from the node (resources or a file), which cannot be read through the apiserver; give its flag", name)
}

// readSources reads envFrom's ConfigMaps and Secrets.
func (e *podEnv) readSources() error {
	e.fromSources = map[string]string{}
	for _, src := range e.c.EnvFrom {
		var data map[string]string
		switch {
		case src.ConfigMapRef != nil:
			cm, err := e.objects.configMap(e.ctx, src.ConfigMapRef.Name)
			if apierrors.IsNotFound(err) && src.ConfigMapRef.Optional != nil && *src.ConfigMapRef.Optional {
				continue
			}
			if err != nil {
				return fmt.Errorf("envFrom: %w", err)
			}
			data = cm.Data
		case src.SecretRef != nil:
			s, err := e.objects.secret(e.ctx, src.SecretRef.Name)
			if apierrors.IsNotFound(err) && src.SecretRef.Optional != nil && *src.SecretRef.Optional {
				continue
			}
			if err != nil {
				return fmt.Errorf("envFrom: %w", err)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		for k, v := range data {
			e.fromSources[src.Prefix+k] = v
		}
	}
	return nil
}

// fieldOf is a downward-API field of the Pod.
func fieldOf(p *corev1.Pod, field string) (string, error) {
	if k, ok := strings.CutPrefix(field, "metadata.labels['"); ok && strings.HasSuffix(k, "']") {
		return p.Labels[strings.TrimSuffix(k, "']")], nil
	}
	if k, ok := strings.CutPrefix(field, "metadata.annotations['"); ok && strings.HasSuffix(k, "']") {
		return p.Annotations[strings.TrimSuffix(k, "']")], nil
	}
	switch field {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.podIP":
		return p.Status.PodIP, nil
	case "status.hostIP":
		return p.Status.HostIP, nil
	}
	return "", fmt.Errorf("the field %s is not one this command reads", field)
}

// expand replaces $(VAR) references as the kubelet does: $$ is a $, and a reference to a
// variable that is not set stays as written.
func expand(s string, lookup func(string) (string, bool, error)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				v, ok, err := lookup(name)
				if err != nil {
					return "", err
				}
				if ok {
					b.WriteString(v)
				} else {
					b.WriteString("$(" + name + ")")
				}
				i += 2 + end
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// objects reads the Secrets and ConfigMaps of the Pod's namespace, each once.
type objects struct {
	kr         kubeReader
	ns         string
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func (o *objects) secret(ctx context.Context, name string) (*corev1.Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	s, err := o.kr.secrets(o.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the Secret %s/%s: %w", o.ns, name, err)
	}
	if o.secrets == nil {
		o.secrets = map[string]*corev1.Secret{}
	}
	o.secrets[name] = s
	return s, nil
}

func (o *objects) configMap(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	if cm, ok := o.configMaps[name]; ok {
		return cm, nil
	}
	cm, err := o.kr.configMaps(o.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the ConfigMap %s/%s: %w", o.ns, name, err)
	}
	if o.configMaps == nil {
		o.configMaps = map[string]*corev1.ConfigMap{}
	}
	o.configMaps[name] = cm
	return cm, nil
}

// mountedKeys reads the mTLS files the operator's --tls-ca, --tls-cert and --tls-key name
// from the Secrets or ConfigMaps mounted there, into memory. secret is the namespace/name of
// the Secret the client certificate comes from, for Settings.Secret.
func mountedKeys(ctx context.Context, env *podEnv, files [3]string) (keys *routerhosts.PEM, secret string, err error) {
	var data [3][]byte
	for i, f := range files {
		b, from, err := mountedFile(ctx, env, f)
		if err != nil {
			return nil, "", fmt.Errorf("--%s %s: %w; give --tls-ca, --tls-cert and --tls-key from files on this machine", tlsFlags[i], f, err)
		}
		data[i] = b
		if tlsFlags[i] == "tls-cert" {
			secret = from
		}
	}
	keys, err = routerhosts.ParsePEM(data[0], data[1], data[2])
	if err != nil {
		return nil, "", fmt.Errorf("the mTLS material mounted at --tls-ca, --tls-cert and --tls-key: %w", err)
	}
	return keys, secret, nil
}

// errNotHere is a mounted file whose volume is of a kind the apiserver does not hold.
var errNotHere = errors.New("not readable through the apiserver")

// mountedFile is the content of the file at file in the operator's container, read from the
// Secret or ConfigMap (or a projected volume's) behind the volume mounted there; from is the
// namespace/name of the Secret it came from ("" for a ConfigMap).
func mountedFile(ctx context.Context, env *podEnv, file string) (content []byte, from string, err error) {
	file = path.Clean(file)
	var m *corev1.VolumeMount
	for i := range env.c.VolumeMounts {
		vm := &env.c.VolumeMounts[i]
		mp := path.Clean(vm.MountPath)
		if (file == mp || strings.HasPrefix(file, strings.TrimSuffix(mp, "/")+"/")) && (m == nil || len(mp) > len(path.Clean(m.MountPath))) {
			m = vm
		}
	}
	if m == nil {
		return nil, "", fmt.Errorf("no volume is mounted there")
	}
	if m.SubPathExpr != "" {
		return nil, "", fmt.Errorf("the volume %s is mounted with subPathExpr: %w", m.Name, errNotHere)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(file, path.Clean(m.MountPath)), "/")
	if m.SubPath != "" {
		rel = path.Join(m.SubPath, rel)
	}
	var vol *corev1.Volume
	for i := range env.pod.Spec.Volumes {
		if env.pod.Spec.Volumes[i].Name == m.Name {
			vol = &env.pod.Spec.Volumes[i]
		}
	}
	if vol == nil {
		return nil, "", fmt.Errorf("the Pod has no volume %s", m.Name)
	}
	switch {
	case vol.Secret != nil:
		return secretKey(ctx, env.objects, vol.Secret.SecretName, vol.Secret.Items, rel, true)
	case vol.ConfigMap != nil:
		return configMapKey(ctx, env.objects, vol.ConfigMap.Name, vol.ConfigMap.Items, rel, true)
	case vol.Projected != nil:
		for _, src := range vol.Projected.Sources {
			var b []byte
			var from string
			var err error
			switch {
			case src.Secret != nil:
				b, from, err = secretKey(ctx, env.objects, src.Secret.Name, src.Secret.Items, rel, false)
			case src.ConfigMap != nil:
				b, from, err = configMapKey(ctx, env.objects, src.ConfigMap.Name, src.ConfigMap.Items, rel, false)
			default:
				continue
			}
			if err != nil || b != nil {
				return b, from, err
			}
		}
		return nil, "", fmt.Errorf("no Secret or ConfigMap of the projected volume %s holds %s", vol.Name, rel)
	}
	return nil, "", fmt.Errorf("it is on the volume %s, which is no Secret, ConfigMap or projected volume: %w", vol.Name, errNotHere)
}

// itemKey is the key behind the file rel of a volume made from an object's keys: the item
// whose path is rel when items are listed, else the key named rel.
func itemKey(items []corev1.KeyToPath, rel string) (string, bool) {
	if len(items) == 0 {
		return rel, !strings.Contains(rel, "/")
	}
	for _, it := range items {
		if path.Clean(it.Path) == rel {
			return it.Key, true
		}
	}
	return "", false
}

// secretKey is the Secret's key behind the file rel. With must false (one source of a projected
// volume among several) a file the Secret does not hold is no error: nil, for the next source.
func secretKey(ctx context.Context, o *objects, name string, items []corev1.KeyToPath, rel string, must bool) ([]byte, string, error) {
	key, ok := itemKey(items, rel)
	switch {
	case !ok && must:
		return nil, "", fmt.Errorf("no item of the Secret %s's volume is %s", name, rel)
	case !ok:
		return nil, "", nil
	}
	s, err := o.secret(ctx, name)
	if apierrors.IsNotFound(err) && !must {
		return nil, "", nil // an optional source the Pod started without
	}
	if err != nil {
		return nil, "", err
	}
	b, ok := s.Data[key]
	switch {
	case !ok && must:
		return nil, "", fmt.Errorf("the Secret %s/%s has no %s", s.Namespace, s.Name, key)
	case !ok:
		return nil, "", nil
	}
	return b, s.Namespace + "/" + s.Name, nil
}

// configMapKey is secretKey for a ConfigMap (a CA bundle may come from one, trust-manager's).
func configMapKey(ctx context.Context, o *objects, name string, items []corev1.KeyToPath, rel string, must bool) ([]byte, string, error) {
	key, ok := itemKey(items, rel)
	switch {
	case !ok && must:
		return nil, "", fmt.Errorf("no item of the ConfigMap %s's volume is %s", name, rel)
	case !ok:
		return nil, "", nil
	}
	cm, err := o.configMap(ctx, name)
	if apierrors.IsNotFound(err) && !must {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	if v, ok := cm.Data[key]; ok {
		return []byte(v), "", nil
	}
	if b, ok := cm.BinaryData[key]; ok {
		return b, "", nil
	}
	if must {
		return nil, "", fmt.Errorf("the ConfigMap %s/%s has no %s", cm.Namespace, cm.Name, key)
	}
	return nil, "", nil
}
