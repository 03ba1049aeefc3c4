// deploycheck loads gospan's deployment files the way their real consumers do, without a Docker
// engine or a cluster, and prints what it loaded as JSON for tests/e2e/test_deploy.py:
//
//	deploycheck compose FILE   docker-compose.yml through compose-go, the loader behind
//	                           `docker compose config`: schema validation, interpolation,
//	                           normalization and consistency checks (depends_on, networks)
//	deploycheck kube FILE      every document of a Kubernetes manifest decoded strictly into the
//	                           API types of k8s.io/api: an unknown or duplicated field, a wrong
//	                           type or an unknown kind is an error
//
// Errors go to stderr with exit status 1.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/cli"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func loadCompose(file string) ([]byte, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	// No environment and no .env file: the file must stand on its own, as in a fresh checkout.
	opts, err := cli.NewProjectOptions([]string{abs},
		cli.WithWorkingDirectory(filepath.Dir(abs)),
		cli.WithEnv(nil),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return nil, err
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return nil, err
	}
	return project.MarshalJSON()
}

func loadKube(file string) ([]byte, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()

	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var objects []json.RawMessage
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		// Typed objects lose apiVersion and kind on decoding; put them back for the reader.
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		out, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		objects = append(objects, out)
	}
	if len(objects) == 0 {
		return nil, fmt.Errorf("no Kubernetes object in '%s'", file)
	}
	return json.Marshal(objects)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: deploycheck compose|kube FILE")
		os.Exit(2)
	}
	var out []byte
	var err error
	switch os.Args[1] {
	case "compose":
		out, err = loadCompose(os.Args[2])
	case "kube":
		out, err = loadKube(os.Args[2])
	default:
		err = fmt.Errorf("unknown mode '%s'", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "deploycheck: '%s': %v\n", os.Args[2], err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
