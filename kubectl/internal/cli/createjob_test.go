package cli

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// create job --from=cronjob/NAME sends the CronJob's job template as a Job it controls,
// annotated as made by hand.
func TestCreateJobFromCronJob(t *testing.T) {
	var got request
	f := &fakeAPI{routes: discoveryRoutes()}
	f.routes["GET /apis/batch/v1/namespaces/default/cronjobs/hello"] = jsonReply(`{"apiVersion":"batch/v1","kind":"CronJob",
		"metadata":{"name":"hello","namespace":"default","uid":"cj-uid"},
		"spec":{"schedule":"* * * * *","jobTemplate":{"metadata":{"labels":{"app":"hello"}},
		"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"hello","image":"busybox"}]}}}}}}`)
	f.routes["POST /apis/batch/v1/namespaces/default/jobs"] = echo(&got)
	out, errOut, code := run(t, f, "", "create", "job", "manual", "--from=cronjob/hello")
	if code != 0 || out != "job.batch/manual created\n" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var sent, want any
	if err := json.Unmarshal(got.body, &sent); err != nil {
		t.Fatal(err)
	}
	wantBody := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"manual","namespace":"default","labels":{"app":"hello"},
		"annotations":{"cronjob.kubernetes.io/instantiate":"manual"},
		"ownerReferences":[{"apiVersion":"batch/v1","kind":"CronJob","name":"hello","uid":"cj-uid","controller":true}]},
		"spec":{"template":{"metadata":{},"spec":{"restartPolicy":"OnFailure","containers":[{"name":"hello","image":"busybox","resources":{}}]}}},
		"status":{}}`
	if err := json.Unmarshal([]byte(wantBody), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestCreateJobNeedsImageOrFrom(t *testing.T) {
	f := &fakeAPI{routes: discoveryRoutes()}
	_, errOut, code := run(t, f, "", "create", "job", "x")
	if code != 1 || errOut != "error: either --image or --from must be specified\n" {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
}
