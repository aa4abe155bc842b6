package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"minik8s.io/shared/apierror"
)

// HeaderExecution names the WorkflowExecution that recorded a call of POST /workflow.
const HeaderExecution = "X-Workflow-Execution"

// maxInput bounds the body of POST /workflow.
const maxInput = 1 << 20

// FailedBody is the answer to a call whose execution failed. Its first two fields have the
// shape of the function runtime's RuntimeError, so clients that show a function's error show
// a workflow's the same way.
type FailedBody struct {
	// Error is "<error name>: <first line of the cause> (execution <name>)".
	Error string `json:"error"`
	// Traceback is the rest of the cause (a handler's traceback).
	Traceback string `json:"traceback,omitempty"`
	// Name is the error name (the exception type, a Fail state's error or a States.* name),
	// Cause all of the cause.
	Name  string `json:"name"`
	Cause string `json:"cause,omitempty"`
	// Execution names the WorkflowExecution with the trace.
	Execution string `json:"execution"`
}

func failedBody(err *Error, execution string) FailedBody {
	first, rest, _ := strings.Cut(err.Cause, "\n")
	msg := err.Name
	if first != "" {
		msg += ": " + first
	}
	return FailedBody{Error: fmt.Sprintf("%s (execution %s)", msg, execution), Traceback: rest,
		Name: err.Name, Cause: err.Cause, Execution: execution}
}

// Handler serves POST /workflow/<namespace>/<name> with x: the body is the execution's
// input; 200 answers the final output; 404 an unknown workflow; 400 a body that is not JSON;
// 422 an execution that failed, with FailedBody (the workflow ran and reached an error, as
// Step Functions' StartSyncExecution reports FAILED); 503 when the execution cannot be
// recorded. Every answer of a run names its WorkflowExecution in X-Workflow-Execution.
func Handler(x *Executor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/workflow/"), "/")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			writeError(w, http.StatusNotFound, "the path is /workflow/<namespace>/<name>")
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "workflows are run with POST and a JSON body")
			return
		}
		ns, name := parts[0], parts[1]
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxInput))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", maxInput))
				return
			}
			writeError(w, http.StatusBadRequest, "read request body: "+err.Error())
			return
		}
		if _, err := decode(body); err != nil {
			writeError(w, http.StatusBadRequest, "the body must be JSON: "+err.Error())
			return
		}
		ctx := r.Context()
		wf, err := x.API.GetWorkflow(ctx, ns, name)
		switch {
		case errors.Is(err, apierror.ErrNotFound):
			writeError(w, http.StatusNotFound, fmt.Sprintf("workflow %s/%s not found", ns, name))
			return
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("read workflow %s/%s: %v", ns, name, err))
			return
		}
		e, err := x.Start(ctx, wf, body)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		w.Header().Set(HeaderExecution, e.Name)
		out := x.Run(ctx, wf, e, body)
		w.Header().Set("Content-Type", "application/json")
		if out.Err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(failedBody(out.Err, e.Name))
			return
		}
		_, _ = w.Write(out.Output)
	})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
