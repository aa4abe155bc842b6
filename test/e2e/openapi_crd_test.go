package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crontabCRD is the CustomResourceDefinition of Kubernetes' documentation, in a group of the
// test's own.
const crontabCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.openapi-e2e.example.com
spec:
  group: openapi-e2e.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the CronTab runs and when.
            properties:
              cronSpec: {type: string, description: The schedule in cron format.}
              image: {type: string, description: The image the job runs.}
              replicas: {type: integer}
`

// TestCustomResourceExplain: the real kubectl explains a custom resource from the OpenAPI
// documents, v3 and v2, once its definition is created, without a restart.
func TestCustomResourceExplain(t *testing.T) {
	srv := sharedServer(t)
	k := kubectls(t, srv)[0]
	dir := t.TempDir()
	path := filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(path, []byte(crontabCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	k.ok(t, "create", "-f", path)
	defer k.run(t, "delete", "customresourcedefinition", "crontabs.openapi-e2e.example.com")

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"v3", []string{"explain", "crontabs.openapi-e2e.example.com.spec"},
			[]string{"KIND:       CronTab", "GROUP:      openapi-e2e.example.com", "What the CronTab runs and when.", "cronSpec\t<string>", "replicas\t<integer>"}},
		{"v3 by short name", []string{"explain", "ct.spec.cronSpec"},
			[]string{"FIELD: cronSpec <string>", "The schedule in cron format."}},
		{"v3 metadata", []string{"explain", "crontabs.openapi-e2e.example.com.metadata.name"},
			[]string{"FIELD: name <string>"}},
		{"v2", []string{"explain", "crontabs.openapi-e2e.example.com.spec", "--output=plaintext-openapiv2"},
			[]string{"KIND:     CronTab", "VERSION:  openapi-e2e.example.com/v1", "image\t<string>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := k.ok(t, tc.args...).stdout
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl %s lacks %q:\n%s", strings.Join(tc.args, " "), want, out)
				}
			}
		})
	}
}
