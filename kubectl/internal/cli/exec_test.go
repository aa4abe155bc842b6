package cli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

func TestParseExecArgs(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		dash        int
		wantType    string
		wantName    string
		wantCommand []string
		wantErr     string
	}{
		{name: "pod and command", args: []string{"web", "sh", "-c", "exit 3"}, dash: 1,
			wantType: "pods", wantName: "web", wantCommand: []string{"sh", "-c", "exit 3"}},
		{name: "type/name", args: []string{"deploy/web", "date"}, dash: 1,
			wantType: "deployments", wantName: "web", wantCommand: []string{"date"}},
		{name: "short type/name", args: []string{"po/web", "date"}, dash: 1,
			wantType: "pods", wantName: "web", wantCommand: []string{"date"}},
		{name: "command after the dash keeps its dashes", args: []string{"web", "ls", "--", "-l"}, dash: 1,
			wantType: "pods", wantName: "web", wantCommand: []string{"ls", "--", "-l"}},
		{name: "old form without dash", args: []string{"web", "ls"}, dash: -1, wantErr: errExecWithoutDash.Error()},
		{name: "two arguments before the dash", args: []string{"web", "extra", "ls"}, dash: 2, wantErr: errExecWithoutDash.Error()},
		{name: "pod only", args: []string{"web"}, dash: -1, wantErr: "you must specify at least one command for the container"},
		{name: "pod and empty command", args: []string{"web"}, dash: 1, wantErr: "you must specify at least one command for the container"},
		{name: "nothing before the dash", args: []string{"ls"}, dash: 0, wantErr: "pod, type/name or --filename must be specified"},
		{name: "nothing", args: nil, dash: -1, wantErr: "pod, type/name or --filename must be specified"},
		{name: "unknown type", args: []string{"widget/web", "ls"}, dash: 1, wantErr: `the server doesn't have a resource type "widget"`},
		{name: "type without name", args: []string{"pod/", "ls"}, dash: 1, wantErr: "arguments in resource/name form must have a single resource and name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, command, err := parseExecArgs(tt.args, tt.dash)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ref.res.Plural != tt.wantType || ref.name != tt.wantName {
				t.Errorf("target = %s/%s, want %s/%s", ref.res.Plural, ref.name, tt.wantType, tt.wantName)
			}
			if diff := cmp.Diff(tt.wantCommand, command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAttachArgs(t *testing.T) {
	tests := []struct {
		args               []string
		wantType, wantName string
		wantErr            string
	}{
		{args: []string{"web"}, wantType: "pods", wantName: "web"},
		{args: []string{"rs/web"}, wantType: "replicasets", wantName: "web"},
		{args: []string{"deployment", "web"}, wantType: "deployments", wantName: "web"},
		{args: nil, wantErr: "at least 1 argument is required for attach"},
		{args: []string{"a", "b", "c"}, wantErr: "expected POD, TYPE/NAME, or TYPE NAME, (at most 2 arguments) saw 3: [a b c]"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ref, err := parseAttachArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ref.res.Plural != tt.wantType || ref.name != tt.wantName {
				t.Errorf("target = %s/%s, want %s/%s", ref.res.Plural, ref.name, tt.wantType, tt.wantName)
			}
		})
	}
}

// The command line errors come before any request, worded as kubectl's.
func TestStreamCommandUsage(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"exec", "web", "ls"}, wantErr: "error: exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead\nSee 'kubectl exec -h' for help and examples\n"},
		{args: []string{"exec", "--pod-running-timeout=0s", "web", "--", "ls"}, wantErr: "error: --pod-running-timeout must be higher than zero\nSee 'kubectl exec -h' for help and examples\n"},
		{args: []string{"exec", "web"}, wantErr: "error: you must specify at least one command for the container\n"},
		{args: []string{"attach"}, wantErr: "error: at least 1 argument is required for attach\n"},
		{args: []string{"port-forward", "web"}, wantErr: "error: TYPE/NAME and list of ports are required for port-forward\nSee 'kubectl port-forward -h' for help and examples\n"},
		{args: []string{"cp", "a"}, wantErr: "error: source and destination are required\n"},
		{args: []string{"cp", "a", "b"}, wantErr: "error: one of src or dest must be a remote file specification\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := &fakeAPI{routes: map[string]http.HandlerFunc{}}
			out, errOut, code := run(t, f, "", tt.args...)
			if code != 1 || out != "" || errOut != tt.wantErr {
				t.Errorf("exit %d stdout %q stderr %q, want exit 1 and stderr %q", code, out, errOut, tt.wantErr)
			}
			if len(f.calls) != 0 {
				t.Errorf("calls = %v, want none", f.calls)
			}
		})
	}
}

func podJSON(t *testing.T, phase corev1.PodPhase, containers ...string) string {
	t.Helper()
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Status:     corev1.PodStatus{Phase: phase},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	return mustJSON(t, pod)
}

// A stream the apiserver refuses (both the WebSocket and the SPDY upgrade) is reported
// with the server's Status, as kubectl v1.32 does, after kubectl's notices; a completed pod
// is refused before any stream.
func TestExecRefused(t *testing.T) {
	refuse := func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, apierror.New(apierror.ErrBadRequest, "container %s is not valid for pod web", r.URL.Query().Get("container")))
	}
	tests := []struct {
		name      string
		pod       string
		args      []string
		wantErr   string
		wantCalls []string
	}{
		{name: "unknown container", pod: podJSON(t, corev1.PodRunning, "app"), args: []string{"exec", "web", "-c", "nope", "--", "ls"},
			wantErr: "Error from server (BadRequest): container nope is not valid for pod web\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web", "GET /api/v1/namespaces/default/pods/web/exec",
				"POST /api/v1/namespaces/default/pods/web/exec"}},
		{name: "default container of two, with notice", pod: podJSON(t, corev1.PodRunning, "app", "side"), args: []string{"exec", "web", "--", "ls"},
			wantErr: "Defaulted container \"app\" out of: app, side\nError from server (BadRequest): container app is not valid for pod web\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web", "GET /api/v1/namespaces/default/pods/web/exec",
				"POST /api/v1/namespaces/default/pods/web/exec"}},
		{name: "quiet", pod: podJSON(t, corev1.PodRunning, "app", "side"), args: []string{"exec", "-q", "web", "--", "ls"},
			wantErr: "Error from server (BadRequest): container app is not valid for pod web\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web", "GET /api/v1/namespaces/default/pods/web/exec",
				"POST /api/v1/namespaces/default/pods/web/exec"}},
		{name: "completed pod", pod: podJSON(t, corev1.PodSucceeded, "app"), args: []string{"exec", "web", "--", "ls"},
			wantErr:   "error: cannot exec into a container in a completed pod; current phase is Succeeded\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web"}},
		{name: "attach to a completed pod", pod: podJSON(t, corev1.PodFailed, "app"), args: []string{"attach", "web"},
			wantErr:   "error: cannot attach a container in a completed pod; current phase is Failed\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web"}},
		{name: "attach to an unknown container", pod: podJSON(t, corev1.PodRunning, "app"), args: []string{"attach", "web", "-c", "nope"},
			wantErr:   "error: cannot attach to the container: container nope not found in pod web\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web"}},
		{name: "port-forward to a pending pod", pod: podJSON(t, corev1.PodPending, "app"), args: []string{"port-forward", "pod/web", "8080"},
			wantErr:   "error: unable to forward port because pod is not running. Current status=Pending\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web", "GET /api/v1/namespaces/default/pods/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var query string
			f := &fakeAPI{routes: map[string]http.HandlerFunc{
				"GET /api/v1/namespaces/default/pods/web": jsonReply(tt.pod),
				"GET /api/v1/namespaces/default/pods/web/exec": func(w http.ResponseWriter, r *http.Request) {
					query = r.URL.RawQuery
					refuse(w, r)
				},
				"POST /api/v1/namespaces/default/pods/web/exec": refuse,
			}}
			out, errOut, code := run(t, f, "", tt.args...)
			if code != 1 || out != "" || errOut != tt.wantErr {
				t.Errorf("exit %d stdout %q stderr %q, want exit 1 and stderr %q", code, out, errOut, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantCalls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if strings.HasPrefix(tt.name, "unknown container") && query != "command=ls&container=nope&stderr=true&stdout=true" {
				t.Errorf("exec query = %q", query)
			}
		})
	}
}

func TestRestConfigFor(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\n")
	rc := restConfigFor(&client.Config{Server: "https://127.0.0.1:6443", Token: "tok", CAData: ca, TLSServerName: "api", UserAgent: "ua"})
	if rc.Host != "https://127.0.0.1:6443" || rc.BearerToken != "tok" || string(rc.CAData) != string(ca) ||
		rc.ServerName != "api" || rc.Insecure || rc.UserAgent != "ua" || rc.Timeout != 0 {
		t.Errorf("rest.Config = %+v", rc)
	}
	// client-go refuses a CA with insecure; our client ignores the CA then, and so does this.
	rc = restConfigFor(&client.Config{Server: "https://h", CAData: ca, Insecure: true})
	if !rc.Insecure || len(rc.CAData) != 0 {
		t.Errorf("insecure rest.Config keeps CA %q, insecure %v", rc.CAData, rc.Insecure)
	}
	// Streams impersonate as every other request does.
	imp := client.Impersonation{UserName: "jane", UID: "42", Groups: []string{"dev", "ops"}}
	rc = restConfigFor(&client.Config{Server: "https://h", Impersonate: imp})
	want := rest.ImpersonationConfig{UserName: "jane", UID: "42", Groups: []string{"dev", "ops"}}
	if diff := cmp.Diff(want, rc.Impersonate); diff != "" {
		t.Errorf("rest.Config impersonation (-want +got):\n%s", diff)
	}
}

// The flags and the kubeconfig resolve into rest.Config as into our client: --server,
// --token and --insecure-skip-tls-verify over the kubeconfig's context.
func TestRestConfigFromFlags(t *testing.T) {
	dir := t.TempDir()
	kc := dir + "/config"
	writeTestFile(t, kc, `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://from-kubeconfig:6443
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: team}
- name: other
  context: {cluster: c, user: u2}
current-context: ctx
users:
- name: u
  user: {token: kubeconfig-token}
- name: u2
  user: {token: other-token}
`)
	tests := []struct {
		name                string
		o                   options
		wantHost, wantToken string
		wantInsecure        bool
		wantNS              string
	}{
		{name: "kubeconfig", o: options{kubeconfig: kc}, wantHost: "https://from-kubeconfig:6443", wantToken: "kubeconfig-token", wantNS: "team"},
		{name: "context", o: options{kubeconfig: kc, context: "other"}, wantHost: "https://from-kubeconfig:6443", wantToken: "other-token", wantNS: "default"},
		{name: "flags win", o: options{kubeconfig: kc, server: "https://flag:1", token: "flag-token", insecure: true},
			wantHost: "https://flag:1", wantToken: "flag-token", wantInsecure: true, wantNS: "team"},
		{name: "flags without kubeconfig", o: options{server: "https://flag:1", token: "t"}, wantHost: "https://flag:1", wantToken: "t", wantNS: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", dir+"/none")
			rc, err := tt.o.restConfig()
			if err != nil {
				t.Fatal(err)
			}
			if rc.Host != tt.wantHost || rc.BearerToken != tt.wantToken || rc.Insecure != tt.wantInsecure {
				t.Errorf("rest.Config host %q token %q insecure %v", rc.Host, rc.BearerToken, rc.Insecure)
			}
			if ns := tt.o.ns(); ns != tt.wantNS {
				t.Errorf("namespace = %q, want %q", ns, tt.wantNS)
			}
		})
	}
}
