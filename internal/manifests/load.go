// Package manifests reads Kubernetes manifests (multi-document YAML, as kustomize build or helm
// template write them) and lays them over a cluster's objects, for the plan command: the
// sources read the manifests through clients that answer with the live objects, the manifests
// standing in for the objects of the same kind, namespace and name (or with the manifests
// alone, offline). The sources are the operator's own; only their view of the cluster changes.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Object is one object of the manifests and where it was written.
type Object struct {
	*unstructured.Unstructured
	// Origin is the file and the document's place in it (file#3), for errors and the plan.
	Origin string
}

// Load reads every object of paths: a file, a folder (its .yaml, .yml and .json files, in
// lexical order, subfolders included) or "-" for stdin. A List's items are objects of their
// own; empty documents are skipped. A document that is no Kubernetes object (no apiVersion,
// kind or metadata.name) is an error naming where it is, as is the same object given twice.
func Load(paths []string, stdin io.Reader) ([]Object, error) {
	var out []Object
	seen := map[string]string{}
	for _, p := range paths {
		files, err := filesOf(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			var r io.Reader
			if f == "-" {
				r = stdin
			} else {
				data, err := os.ReadFile(f)
				if err != nil {
					return nil, fmt.Errorf("reading manifests: %w", err)
				}
				r = bytes.NewReader(data)
			}
			objs, err := decode(r, displayName(f))
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				k := KeyOf(o.Unstructured).String()
				if prev, ok := seen[k]; ok {
					return nil, fmt.Errorf("%s: %s is also given in %s; each object once", o.Origin, k, prev)
				}
				seen[k] = o.Origin
				out = append(out, o)
			}
		}
	}
	return out, nil
}

func displayName(f string) string {
	if f == "-" {
		return "stdin"
	}
	return f
}

// filesOf is the one file p names, or the manifest files under the folder p.
func filesOf(p string) ([]string, error) {
	if p == "-" {
		return []string{"-"}, nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("reading manifests: %w", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, path)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading manifests under %s: %w", p, err)
	}
	slices.Sort(files)
	return files, nil
}

// decode reads the documents of one stream.
func decode(r io.Reader, name string) ([]Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	var out []Object
	for doc := 1; ; doc++ {
		var raw map[string]any
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		where := fmt.Sprintf("%s#%d", name, doc)
		if err != nil {
			return nil, fmt.Errorf("%s: not YAML or JSON: %w", where, err)
		}
		if len(raw) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: raw}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: a %s whose items are not objects: %w", where, u.GetKind(), err)
			}
			for i := range list.Items {
				item := &list.Items[i]
				iw := fmt.Sprintf("%s item %d", where, i+1)
				if err := check(item, iw); err != nil {
					return nil, err
				}
				out = append(out, Object{Unstructured: item, Origin: iw})
			}
			continue
		}
		if err := check(u, where); err != nil {
			return nil, err
		}
		out = append(out, Object{Unstructured: u, Origin: where})
	}
}

func check(u *unstructured.Unstructured, where string) error {
	switch {
	case u.GetAPIVersion() == "":
		return fmt.Errorf("%s: no apiVersion: not a Kubernetes object", where)
	case u.GetKind() == "":
		return fmt.Errorf("%s: no kind: not a Kubernetes object", where)
	case u.GetName() == "":
		if u.GetGenerateName() != "" {
			return fmt.Errorf("%s: %s with generateName only: the plan needs a name to match the live object", where, u.GetKind())
		}
		return fmt.Errorf("%s: %s without metadata.name", where, u.GetKind())
	}
	return nil
}
