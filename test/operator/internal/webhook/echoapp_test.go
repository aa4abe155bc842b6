package webhook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	demov1 "minik8s.io/test/operator/api/v1"
)

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := demov1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// request is an AdmissionRequest for obj, a raw EchoApp as kubectl would send it.
func request(op admissionv1.Operation, obj string) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: op, Kind: metaKind, Namespace: "ns", Name: "web",
		Object: runtime.RawExtension{Raw: []byte(obj)}, OldObject: runtime.RawExtension{Raw: []byte(obj)},
	}}
}

var metaKind = metav1.GroupVersionKind{Group: "demo.minik8s.io", Version: "v1", Kind: "EchoApp"}

const objFmt = `{"apiVersion":"demo.minik8s.io/v1","kind":"EchoApp","metadata":{"name":"web","namespace":"ns","uid":"u1","creationTimestamp":null},"spec":{%s}}`

// TestMutatingWebhook sends admission requests through controller-runtime's handler, so what
// is checked is the JSONPatch the apiserver gets: only the tier is added, nothing else moves.
func TestMutatingWebhook(t *testing.T) {
	wh := &admission.Webhook{Handler: Mutator{}}
	addFree := []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/spec/tier", Value: "free"}}
	for _, tc := range []struct {
		name  string
		op    admissionv1.Operation
		spec  string
		patch []jsonpatch.JsonPatchOperation
	}{
		{"no tier gets free", admissionv1.Create, `"replicas":1,"message":"hi"`, addFree},
		{"update without tier gets free", admissionv1.Update, `"replicas":2,"message":"hi"`, addFree},
		{"empty tier gets free", admissionv1.Create, `"message":"hi","tier":""`, addFree},
		{"null tier gets free", admissionv1.Create, `"message":"hi","tier":null`, addFree},
		{"a wrong type elsewhere is left to the schema", admissionv1.Create, `"replicas":"two","message":"hi"`, addFree},
		{"pro stays", admissionv1.Create, `"replicas":1,"message":"hi","tier":"pro"`, nil},
		{"free stays", admissionv1.Create, `"message":"hi","tier":"free"`, nil},
		{"a tier the schema refuses stays for it to refuse", admissionv1.Create, `"message":"hi","tier":"gold"`, nil},
		{"a tier of the wrong type stays for the schema", admissionv1.Create, `"message":"hi","tier":3`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := wh.Handle(t.Context(), request(tc.op, strings.Replace(objFmt, "%s", tc.spec, 1)))
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			if diff := cmp.Diff(tc.patch, resp.Patches); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
			if tc.patch != nil && (resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch) {
				t.Errorf("patch type %v, want JSONPatch", resp.PatchType)
			}
		})
	}
	for _, tc := range []struct{ name, obj string }{
		{"no spec", `{"apiVersion":"demo.minik8s.io/v1","kind":"EchoApp","metadata":{"name":"web"}}`},
		{"spec not an object", `{"apiVersion":"demo.minik8s.io/v1","kind":"EchoApp","metadata":{"name":"web"},"spec":"x"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := wh.Handle(t.Context(), request(admissionv1.Create, tc.obj))
			if !resp.Allowed || len(resp.Patches) != 0 {
				t.Errorf("response %+v, want allowed without a patch (the schema refuses it)", resp.AdmissionResponse)
			}
		})
	}
}

func TestValidatingWebhook(t *testing.T) {
	wh := admission.WithValidator(scheme(t), Validator{})
	for _, tc := range []struct {
		name    string
		op      admissionv1.Operation
		message string
		denied  string // "" when allowed
	}{
		{"plain message", admissionv1.Create, "hello world", ""},
		{"the word", admissionv1.Create, "this is forbidden", `spec.message: Invalid value: "this is forbidden": must not contain the word "forbidden"`},
		{"the word capitalised", admissionv1.Create, "Forbidden fruit", `spec.message: Invalid value: "Forbidden fruit": must not contain the word "forbidden"`},
		{"the word on update", admissionv1.Update, "now forbidden!", `spec.message: Invalid value: "now forbidden!": must not contain the word "forbidden"`},
		{"part of another word", admissionv1.Create, "unforbiddenly fine", ""},
		{"delete is allowed", admissionv1.Delete, "forbidden", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := json.Marshal(tc.message)
			if err != nil {
				t.Fatal(err)
			}
			req := request(tc.op, strings.Replace(objFmt, "%s", `"message":`+string(msg), 1))
			if tc.op == admissionv1.Delete {
				req.Object.Raw = nil
			}
			resp := wh.Handle(t.Context(), req)
			if tc.denied == "" {
				if !resp.Allowed {
					t.Fatalf("refused: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed {
				t.Fatal("allowed")
			}
			want := `EchoApp.demo.minik8s.io "web" is invalid: ` + tc.denied
			if resp.Result == nil || resp.Result.Message != want || resp.Result.Code != 422 {
				t.Errorf("result %+v, want 422 %q", resp.Result, want)
			}
		})
	}
}
