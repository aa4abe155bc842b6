package openapi

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/util/proto/validation"
	"sigs.k8s.io/yaml"

	"minik8s.io/shared/scheme"
)

// The v2 document as kubectl's client-side validation and Helm read it.

// models loads the document as kubectl and Helm do and indexes its kinds by the GVK
// extension, as kubectl's openapi.Resources does.
func models(t *testing.T, v *V2) (openapiproto.Models, map[schema.GroupVersionKind]string) {
	t.Helper()
	m, err := openapiproto.NewOpenAPIData(parseV2(t, v))
	if err != nil {
		t.Fatalf("NewOpenAPIData: %v", err)
	}
	byGVK := map[schema.GroupVersionKind]string{}
	for _, name := range m.ListModels() {
		list, _ := m.LookupModel(name).GetExtensions()[extGVK].([]any)
		for _, entry := range list {
			// The extensions come out of YAML, with keys of any type.
			e, _ := entry.(map[any]any)
			gvk := schema.GroupVersionKind{}
			gvk.Group, _ = e["group"].(string)
			gvk.Version, _ = e["version"].(string)
			gvk.Kind, _ = e["kind"].(string)
			if other, ok := byGVK[gvk]; ok {
				t.Errorf("%s is both %s and %s", gvk, other, name)
			}
			byGVK[gvk] = name
		}
	}
	return m, byGVK
}

func TestV2ModelsOfEveryResource(t *testing.T) {
	m, byGVK := models(t, buildV2(t))
	for _, r := range scheme.Served() {
		gv := r.GVK.GroupVersion()
		for _, tc := range []struct {
			gvk    schema.GroupVersionKind
			fields []string
		}{
			{r.GVK, []string{"apiVersion", "kind", "metadata"}},
			{gv.WithKind(r.GVK.Kind + "List"), []string{"apiVersion", "items", "kind", "metadata"}},
			{gv.WithKind("DeleteOptions"), []string{"apiVersion", "dryRun", "kind", "propagationPolicy"}},
		} {
			t.Run(tc.gvk.String(), func(t *testing.T) {
				name, ok := byGVK[tc.gvk]
				if !ok {
					t.Fatalf("no model has the GVK extension %s", tc.gvk)
				}
				kind, ok := m.LookupModel(name).(*openapiproto.Kind)
				if !ok {
					t.Fatalf("model %s is %T, want an object with fields", name, m.LookupModel(name))
				}
				for _, f := range tc.fields {
					if _, ok := kind.Fields[f]; !ok {
						t.Errorf("%s has no field %s; has %v", name, f, kind.FieldOrder)
					}
				}
			})
		}
	}
}

// TestV2Validation validates manifests the way kubectl's client-side validation does.
func TestV2Validation(t *testing.T) {
	m, byGVK := models(t, buildV2(t))
	cases := []struct {
		name     string
		manifest string
		wantErrs []string // substrings, one error each; none means the manifest is valid
	}{
		{name: "deployment", manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}, creationTimestamp: null}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        env: [{name: MODE, value: prod}]
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 1, memory: 1Gi}}
        readinessProbe: {httpGet: {path: /, port: http}}
        livenessProbe: {tcpSocket: {port: 80}, periodSeconds: 10}
`},
		{name: "service", manifest: `
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, nodePort: 30080, protocol: TCP}
  - {name: admin, port: 9000, targetPort: admin}
`},
		{name: "configmap", manifest: `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, annotations: {owner: team}}
data: {mode: prod}
`},
		{name: "secret", manifest: `
apiVersion: v1
kind: Secret
metadata: {name: token}
type: Opaque
data: {token: c2VjcmV0}
stringData: {user: admin}
`},
		{name: "serviceaccount", manifest: `
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder}
automountServiceAccountToken: false
secrets: [{name: token}]
`},
		{name: "pod", manifest: `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  restartPolicy: Never
  nodeSelector: {disk: ssd}
  volumes: [{name: scratch, emptyDir: {sizeLimit: 1Gi}}]
  containers:
  - name: a
    image: busybox
    command: [sh, -c, "sleep 3600"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
`},
		{name: "function", manifest: `
apiVersion: serverless.minik8s.io/v1
kind: Function
metadata: {name: hello}
spec: {handler: main.handle, source: {main.py: "def handle(e): return e"}}
`},
		{name: "unknown field", manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replica: 3
  selector: {matchLabels: {app: web}}
  template: {spec: {containers: [{name: web, image: nginx}]}}
`, wantErrs: []string{`unknown field "replica" in io.k8s.api.apps.v1.DeploymentSpec`}},
		{name: "wrong type", manifest: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: three
  selector: {matchLabels: {app: web}}
  template: {spec: {containers: [{name: web, image: nginx}]}}
`, wantErrs: []string{`invalid type for io.k8s.api.apps.v1.DeploymentSpec.replicas: got "string", expected "integer"`}},
		{name: "string for a list", manifest: `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: nginx}
`, wantErrs: []string{`invalid type for io.k8s.api.core.v1.PodSpec.containers: got "string", expected "array"`}},
		{name: "missing container name", manifest: `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{image: nginx}]}
`, wantErrs: []string{`missing required field "name" in io.k8s.api.core.v1.Container`}},
		{name: "misspelt metadata field", manifest: `
apiVersion: v1
kind: Service
metadata: {name: web, label: {app: web}}
spec: {ports: [{port: 80}]}
`, wantErrs: []string{`unknown field "label" in io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`}},
		{name: "own kind's field type", manifest: `
apiVersion: serverless.minik8s.io/v1
kind: Function
metadata: {name: hello}
spec: {handler: main.handle, source: [main.py]}
`, wantErrs: []string{`invalid type for io.minik8s.shared.apis.serverless.v1.FunctionSpec.source: got "array", expected "map"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(tc.manifest), &obj); err != nil {
				t.Fatalf("manifest: %v", err)
			}
			apiVersion, _ := obj["apiVersion"].(string)
			kind, _ := obj["kind"].(string)
			gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
			if !slices.ContainsFunc(scheme.Served(), func(r *scheme.Resource) bool { return r.GVK == gvk }) {
				t.Skipf("%s is not served (yet)", gvk)
			}
			name, ok := byGVK[gvk]
			if !ok {
				t.Fatalf("no model for %s", gvk)
			}
			errs := validation.ValidateModel(obj, m.LookupModel(name), name)
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if len(got) != len(tc.wantErrs) {
				t.Fatalf("errors = %q, want %d matching %q", got, len(tc.wantErrs), tc.wantErrs)
			}
			for i, want := range tc.wantErrs {
				if !strings.Contains(got[i], want) {
					t.Errorf("error %d = %q, want it to contain %q", i, got[i], want)
				}
			}
		})
	}
}
