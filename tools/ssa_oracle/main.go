// Command ssa_oracle runs Kubernetes' own field manager (k8s.io/apimachinery
// pkg/util/managedfields over sigs.k8s.io/structured-merge-diff) on server-side apply scenarios
// and writes what it makes of each step, for pumice's tests to compare against
// (tests/api/ssa_upstream_cases.json).
//
// Input (stdin): a JSON list of scenarios {"name", "apiVersion", "kind", "steps": [{"op":
// "apply"|"update", "manager", "force", "object"}]}. Output (stdout): the same list, each step
// with "upstream": {"error": text or null, "managedFields": [[manager, operation, fieldsV1]],
// "object": the live object without its managedFields}.
//
// Schemas: the kube-apiserver OpenAPI v3 documents in $OPENAPI_DIR (client-go's
// openapi/openapitest/testdata). The field manager is the test one (no conversion, no
// defaulting), on unstructured objects: a built-in object's spec that a step creates is
// recorded with ".": {} where kube-apiserver's typed objects record none.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

type step struct {
	Op       string                 `json:"op"`
	Manager  string                 `json:"manager"`
	Force    bool                   `json:"force,omitempty"`
	Object   map[string]interface{} `json:"object"`
	Upstream *result                `json:"upstream,omitempty"`
}

type result struct {
	Error         *string                `json:"error"`
	ManagedFields [][]interface{}        `json:"managedFields"`
	Object        map[string]interface{} `json:"object"`
}

type scenario struct {
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Steps      []step `json:"steps"`
}

func typeConverter(dir string) (managedfields.TypeConverter, error) {
	schemas := map[string]*spec.Schema{}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc spec3.OpenAPI
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if doc.Components != nil {
			for k, v := range doc.Components.Schemas {
				schemas[k] = v
			}
		}
	}
	return managedfields.NewTypeConverter(schemas, false)
}

func main() {
	tc, err := typeConverter(os.Getenv("OPENAPI_DIR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var scenarios []scenario
	if err := json.NewDecoder(os.Stdin).Decode(&scenarios); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := range scenarios {
		sc := &scenarios[i]
		gv, err := schema.ParseGroupVersion(sc.APIVersion)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fm := managedfieldstest.NewTestFieldManager(tc, gv.WithKind(sc.Kind))
		for j := range sc.Steps {
			s := &sc.Steps[j]
			obj := &unstructured.Unstructured{Object: s.Object}
			var err error
			if s.Op == "apply" {
				err = fm.Apply(obj.DeepCopy(), s.Manager, s.Force)
			} else {
				err = fm.Update(obj.DeepCopy(), s.Manager)
			}
			r := &result{ManagedFields: [][]interface{}{}}
			if err != nil {
				text := err.Error()
				r.Error = &text
			}
			for _, e := range fm.ManagedFields() {
				var fv1 interface{}
				if e.FieldsV1 != nil {
					if err := json.Unmarshal(e.FieldsV1.Raw, &fv1); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
				}
				r.ManagedFields = append(r.ManagedFields, []interface{}{e.Manager, string(e.Operation), fv1})
			}
			live := fm.Live().(*unstructured.Unstructured).DeepCopy()
			unstructured.RemoveNestedField(live.Object, "metadata", "managedFields")
			r.Object = live.Object
			s.Upstream = r
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(scenarios); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
