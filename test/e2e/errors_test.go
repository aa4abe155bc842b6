package e2e

import (
	"strings"
	"testing"
)

// TestClientErrors checks the three ways a write is refused: a stale resourceVersion
// (Conflict), an invalid object (422 naming the field path) and an unknown field (strict
// decoding).
func TestClientErrors(t *testing.T) {
	srv := sharedServer(t)
	ks := kubectls(t, srv)
	for _, k := range ks {
		t.Run(k.name, func(t *testing.T) {
			ns := "e2e-errors-" + k.name
			createNamespace(t, ks[0], ns)
			dir := t.TempDir()
			m := manifest{Suffix: k.name, NS: ns, Rev: "1"}

			// A stale update: read the object, change it behind the reader's back, then
			// write the old copy back.
			cm := render(t, dir, "configmap.yaml", m)
			k.ok(t, "create", "-f", cm)
			old := k.ok(t, "-n", ns, "get", "configmap", "e2e-cm-"+k.name, "-o", "yaml").stdout
			stale := dir + "/stale.yaml"
			writeFile(t, stale, strings.Replace(old, "greeting: hello", "greeting: stale", 1))
			k.ok(t, "-n", ns, "patch", "configmap", "e2e-cm-"+k.name, "--type", "merge", "-p", `{"data":{"greeting":"newer"}}`)
			// Ours has no replace; its apply sends the manifest's resourceVersion as a
			// precondition just as the real one does.
			verbs := [][]string{{"apply", "-f", stale}}
			if k.name == "real" {
				verbs = append(verbs, []string{"replace", "-f", stale})
			}
			for _, v := range verbs {
				r := k.run(t, v...)
				const want = "Error from server (Conflict)"
				switch {
				case r.err != nil && strings.Contains(r.stderr, want) && strings.Contains(r.stderr, "the object has been modified"):
				case swallowed(k, r):
					t.Errorf("%s\n%s", "our kubectl's "+v[0]+" -f drops the server's error and exits 0 (forEachManifest shadows err)", r)
				default:
					t.Errorf("%s of a stale object should fail with %q:\n%s", v[0], want, r)
				}
			}
			live := getJSON(t, k, ns, "configmaps", "e2e-cm-"+k.name)
			if got := field(live, "data.greeting"); got != "newer" {
				t.Errorf("the stale write changed the object: data.greeting = %q, want newer", got)
			}

			invalid := render(t, dir, "invalid-pod.yaml", m)
			unknown := render(t, dir, "unknown-field.yaml", m)
			for _, verb := range []string{"create", "apply"} {
				r := k.run(t, verb, "-f", invalid)
				want := `The Pod "e2e-invalid-` + k.name + `" is invalid: spec.containers[1].image: Required value`
				switch {
				case r.err != nil && strings.Contains(r.stderr, want):
				case swallowed(k, r):
					t.Errorf("%s\n%s", "our kubectl's "+verb+" -f drops the server's error and exits 0 (forEachManifest shadows err)", r)
				default:
					t.Errorf("%s of an invalid pod should fail with %q:\n%s", verb, want, r)
				}

				r = k.run(t, verb, "-f", unknown)
				want = `strict decoding error: unknown field "spec.bogusField"`
				switch {
				case r.err != nil && strings.Contains(r.stderr, want):
				case k.name == "ours" && r.err == nil && strings.Contains(r.stdout, "deployment.apps/e2e-unknown-ours"):
					t.Errorf("%s\n%s", "our kubectl does not send fieldValidation=Strict, so unknown fields are dropped silently", r)
					k.ok(t, "-n", ns, "delete", "deployment", "e2e-unknown-ours")
				case swallowed(k, r):
					t.Errorf("%s\n%s", "our kubectl's "+verb+" -f drops the server's error and exits 0 (forEachManifest shadows err)", r)
				default:
					t.Errorf("%s with an unknown field should fail with %q:\n%s", verb, want, r)
				}
			}
			for _, ref := range []string{"pod/e2e-invalid-" + k.name, "deployment/e2e-unknown-" + k.name} {
				r := k.run(t, "-n", ns, "get", ref)
				_, name, _ := strings.Cut(ref, "/")
				if !strings.Contains(r.stderr, "NotFound") || strings.Contains(r.stdout, name) {
					t.Errorf("refused object %s exists after all:\n%s", ref, r)
				}
			}
		})
	}
}

// swallowed is the symptom of our kubectl losing a server error: exit 0, nothing printed.
func swallowed(k kubectl, r result) bool {
	return k.name == "ours" && r.err == nil && strings.TrimSpace(r.stdout+r.stderr) == ""
}

// The real kubectl's generator commands send protobuf bodies.
func TestRealKubectlGenerators(t *testing.T) {
	srv := sharedServer(t)
	k := kubectls(t, srv)[0]
	if k.name != "real" {
		t.Fatalf("first kubectl is %s, want real", k.name)
	}
	k.ok(t, "create", "namespace", "e2e-generators")
	k.ok(t, "-n", "e2e-generators", "create", "configmap", "gen", "--from-literal=a=1")
	k.ok(t, "-n", "e2e-generators", "create", "secret", "generic", "gen", "--from-literal=p=s3cret")
	live := getJSON(t, k, "e2e-generators", "secrets", "gen")
	if got := field(live, "data.p"); got != "czNjcmV0" {
		t.Errorf("secret data.p = %q", got)
	}
	k.ok(t, "delete", "namespace", "e2e-generators")
}
