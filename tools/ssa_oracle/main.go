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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

type step struct {
	// Op: "apply" (server-side), "update", or "client-apply": what client-side kubectl apply
	// sends (a strategic merge patch from the last-applied annotation, the object and the live
	// one; a create when there is none), recorded as an Update by kubectl-client-side-apply.
	Op       string                 `json:"op"`
	Manager  string                 `json:"manager"`
	Force    bool                   `json:"force,omitempty"`
	Object   map[string]interface{} `json:"object"`
	Upstream *result                `json:"upstream,omitempty"`
}

type result struct {
	// Patch: the strategic merge patch a client-apply step sends (null for a create)
	Patch         interface{}            `json:"patch,omitempty"`
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

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// clientApply is what client-side kubectl apply makes of config over live (kubectl
// apply/patcher.go patchSimple: the three-way strategic merge patch of the last-applied
// configuration, the configuration with its annotation, and the live object; applied by the
// server with the Go type's patch tags). Returns the new object and the patch (nil for a create).
func clientApply(live, config *unstructured.Unstructured, kind string) (*unstructured.Unstructured, interface{}, error) {
	modifiedObj := config.DeepCopy()
	plain, err := json.Marshal(config.Object)
	if err != nil {
		return nil, nil, err
	}
	annotations := modifiedObj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[lastApplied] = string(plain) + "\n"
	modifiedObj.SetAnnotations(annotations)
	if live.GetName() == "" {
		return modifiedObj, nil, nil
	}
	var dataStruct interface{}
	switch kind {
	case "Deployment":
		dataStruct = &appsv1.Deployment{}
	case "Service":
		dataStruct = &corev1.Service{}
	case "Pod":
		dataStruct = &corev1.Pod{}
	case "ConfigMap":
		dataStruct = &corev1.ConfigMap{}
	default:
		return nil, nil, fmt.Errorf("client-apply: no Go type for %s", kind)
	}
	meta, err := strategicpatch.NewPatchMetaFromStruct(dataStruct)
	if err != nil {
		return nil, nil, err
	}
	modified, err := json.Marshal(modifiedObj.Object)
	if err != nil {
		return nil, nil, err
	}
	current, err := json.Marshal(live.Object)
	if err != nil {
		return nil, nil, err
	}
	original := []byte(live.GetAnnotations()[lastApplied])
	patch, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, meta, true)
	if err != nil {
		return nil, nil, err
	}
	merged, err := strategicpatch.StrategicMergePatch(current, patch, dataStruct)
	if err != nil {
		return nil, nil, err
	}
	out := &unstructured.Unstructured{}
	if err := json.Unmarshal(merged, &out.Object); err != nil {
		return nil, nil, err
	}
	var p interface{}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, nil, err
	}
	return out, p, nil
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
			r := &result{ManagedFields: [][]interface{}{}}
			switch s.Op {
			case "apply":
				err = fm.Apply(obj.DeepCopy(), s.Manager, s.Force)
			case "client-apply":
				var next *unstructured.Unstructured
				next, r.Patch, err = clientApply(fm.Live().(*unstructured.Unstructured), obj, sc.Kind)
				if err == nil {
					err = fm.Update(next, s.Manager)
				}
			default:
				err = fm.Update(obj.DeepCopy(), s.Manager)
			}
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
