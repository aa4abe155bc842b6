package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/testwait"
)

// crdGroup is the group of the test's CustomResourceDefinition.
const crdGroup = "crd.e2e.minik8s.io"

// widgetCRD defines namespaced widgets in category all, with status and scale subresources
// and printer columns.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.` + crdGroup + `
spec:
  group: ` + crdGroup + `
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    listKind: WidgetList
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Color
      type: string
      jsonPath: .spec.color
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
`

func widgetManifest(ns, name string) string {
	return `apiVersion: ` + crdGroup + `/v1
kind: Widget
metadata:
  name: ` + name + `
  namespace: ` + ns + `
  labels: {app: e2e}
spec:
  replicas: 1
  color: blue
`
}

// TestCustomResourcesWithBothKubectlsOnMakeUp creates a CustomResourceDefinition with our
// kubectl and works with its objects through both kubectls as with any kind: apply, get with
// the definition's printer columns, api-resources, scale through the scale subresource, get
// all, patch, delete; deleting the definition deletes its objects.
func TestCustomResourcesWithBothKubectlsOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-crd")
	ks := c.kubectls(t)
	ours := ks[slices.IndexFunc(ks, func(k kubectl) bool { return k.name == "ours" })]
	crds, err := scheme.Lookup("customresourcedefinitions")
	if err != nil {
		t.Fatal(err)
	}
	crdClient := client.Dynamic(c.cl, crds)
	crdName := "widgets." + crdGroup
	dir := t.TempDir()
	crdFile := filepath.Join(dir, "crd.yaml")
	writeFile(t, crdFile, widgetCRD)
	deleteCRD := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := crdClient.Delete(ctx, "", crdName, metav1.DeleteOptions{}); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			t.Errorf("delete %s: %v", crdName, err)
		}
	}
	deleteCRD() // a leftover of an earlier run
	testwait.For(t, "no CustomResourceDefinition "+crdName+" left", func() bool {
		_, err := crdClient.Get(t.Context(), "", crdName, metav1.GetOptions{})
		return errors.Is(err, apierror.ErrNotFound)
	})
	t.Cleanup(deleteCRD)
	createCRD := func() {
		t.Helper()
		if out := ours.ok(t, "apply", "-f", crdFile).stdout; out != "customresourcedefinition.apiextensions.k8s.io/"+crdName+" created\n" {
			t.Fatalf("apply of the CRD printed %q", out)
		}
		testwait.For(t, "discovery to serve widgets", func() bool {
			l, err := c.cl.ServerResources(t.Context(), crdGroup+"/v1")
			return err == nil && slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == "widgets/scale" })
		})
	}
	createCRD()

	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) {
			name := "w-" + k.name
			kindName := "widget." + crdGroup
			file := filepath.Join(dir, name+".yaml")
			writeFile(t, file, widgetManifest(ns, name))
			if out := k.ok(t, "apply", "-f", file).stdout; out != kindName+"/"+name+" created\n" {
				t.Fatalf("apply printed %q", out)
			}
			if out := k.ok(t, "apply", "-f", file).stdout; out != kindName+"/"+name+" unchanged\n" {
				t.Fatalf("second apply printed %q", out)
			}

			table := k.ok(t, "-n", ns, "get", "widgets", "-l", "app=e2e").stdout
			lines := strings.Split(strings.TrimSpace(table), "\n")
			if len(lines) < 2 || !slices.Equal(strings.Fields(lines[0]), []string{"NAME", "REPLICAS", "COLOR", "AGE"}) ||
				!slices.ContainsFunc(lines[1:], func(l string) bool {
					f := strings.Fields(l)
					return len(f) == 4 && f[0] == name && f[1] == "1" && f[2] == "blue"
				}) {
				t.Fatalf("get widgets does not show the printer columns:\n%s", table)
			}

			resources := k.ok(t, "api-resources").stdout
			if !slices.ContainsFunc(strings.Split(resources, "\n"), func(l string) bool {
				return slices.Equal(strings.Fields(l), []string{"widgets", "wd", crdGroup + "/v1", "true", "Widget"})
			}) {
				t.Fatalf("api-resources does not list widgets:\n%s", resources)
			}

			if out := k.ok(t, "-n", ns, "scale", "wd/"+name, "--replicas=3").stdout; out != kindName+"/"+name+" scaled\n" {
				t.Fatalf("scale printed %q", out)
			}
			if got := k.ok(t, "-n", ns, "get", "widget", name, "-o", "jsonpath={.spec.replicas}").stdout; got != "3" {
				t.Fatalf("spec.replicas after scaling to 3: %q", got)
			}

			all := k.ok(t, "-n", ns, "get", "all").stdout
			if !strings.Contains(all, kindName+"/"+name) {
				t.Fatalf("get all lacks %s/%s:\n%s", kindName, name, all)
			}

			if out := k.ok(t, "-n", ns, "patch", "widget", name, "--type=merge", "-p", `{"spec":{"color":"red"}}`).stdout; out != kindName+"/"+name+" patched\n" {
				t.Fatalf("merge patch printed %q", out)
			}
			if r := k.run(t, "-n", ns, "patch", "widget", name, "-p", `{"spec":{"color":"green"}}`); r.err == nil ||
				!strings.Contains(r.stderr, "error: application/strategic-merge-patch+json is not supported by "+crdGroup+"/v1, Kind=Widget: ") {
				t.Fatalf("a strategic merge patch of a custom resource:\n%s", r)
			}
			if got := k.ok(t, "-n", ns, "get", "wd", name, "-o", "yaml").stdout; !strings.Contains(got, "color: red") {
				t.Fatalf("get -o yaml after the merge patch:\n%s", got)
			}

			if out := k.ok(t, "-n", ns, "delete", "widget", name).stdout; out != kindName+` "`+name+`" deleted`+"\n" {
				t.Fatalf("delete printed %q", out)
			}
			if r := k.run(t, "-n", ns, "get", "widget", name); r.err == nil || !strings.Contains(r.stderr, "NotFound") {
				t.Fatalf("get after delete:\n%s", r)
			}
			// Left for the definition's deletion to delete.
			k.ok(t, "apply", "-f", file)
		})
	}

	// Deleting the definition deletes its objects first: once it is gone, the resource is
	// not served, and a definition made again serves no object.
	if out := ours.ok(t, "delete", "crd", crdName).stdout; out != `customresourcedefinition.apiextensions.k8s.io "`+crdName+`" deleted`+"\n" {
		t.Fatalf("delete crd printed %q", out)
	}
	if r := ours.run(t, "-n", ns, "get", "widgets"); r.err == nil || !strings.Contains(r.stderr, `the server doesn't have a resource type "widgets"`) {
		t.Fatalf("get widgets after the CRD's deletion:\n%s", r)
	}
	createCRD()
	for _, k := range ks {
		if r := k.run(t, "-n", ns, "get", "widgets"); r.err != nil || r.stdout != "" || !strings.Contains(r.stderr, "No resources found in "+ns+" namespace.") {
			t.Fatalf("%s kubectl: widgets left after the CRD was deleted and made again:\n%s", k.name, r)
		}
	}
}
