package workflow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"minik8s.io/serverless/internal/gateway"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// Error is a named failure: the exception type a function's handler raised (for example
// "ValueError"), a Fail state's error, or one of the States.* names; Cause says more.
// Retry and catch rules match on Name.
type Error struct {
	Name  string
	Cause string
}

func (e *Error) Error() string {
	if e.Cause == "" {
		return e.Name
	}
	return e.Name + ": " + e.Cause
}

// Invoker calls a function by namespace and name with a JSON body and returns its JSON
// answer. A failure should be an *Error; any other error is a States.TaskFailed, and a
// *gateway.CallError is named from the gateway's answer.
type Invoker interface {
	Invoke(ctx context.Context, namespace, name string, input []byte) ([]byte, error)
}

// InvokerFunc is a function that is an Invoker.
type InvokerFunc func(ctx context.Context, namespace, name string, input []byte) ([]byte, error)

// Invoke calls f.
func (f InvokerFunc) Invoke(ctx context.Context, namespace, name string, input []byte) ([]byte, error) {
	return f(ctx, namespace, name, input)
}

// maxCause bounds a cause kept from a function's answer (the traceback's tail matters most).
const maxCause = 2048

// asError names any failure of a call.
func asError(err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	var ce *gateway.CallError
	if errors.As(err, &ce) {
		return fromCall(ce.Status, ce.Message, ce.Traceback)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Name: serverlessv1.ErrorTimeout, Cause: err.Error()}
	}
	return &Error{Name: serverlessv1.ErrorTaskFailed, Cause: err.Error()}
}

// fromCall names a call the gateway answered with an error status: a handler that raised is
// its exception's type with the message and the traceback's tail; a timeout is
// States.Timeout; anything else (unknown function, no pod, queue full) States.TaskFailed.
func fromCall(status int, message, traceback string) *Error {
	switch {
	case status == http.StatusGatewayTimeout:
		return &Error{Name: serverlessv1.ErrorTimeout, Cause: message}
	case traceback != "":
		name, msg, ok := strings.Cut(message, ": ")
		if !ok || strings.ContainsAny(name, " \n") || name == "" {
			name, msg = "Exception", message
		}
		cause := msg + "\n" + traceback
		if len(cause) > maxCause {
			cause = "..." + cause[len(cause)-maxCause:]
		}
		return &Error{Name: name, Cause: cause}
	}
	return &Error{Name: serverlessv1.ErrorTaskFailed, Cause: fmt.Sprintf("%d %s: %s", status, http.StatusText(status), message)}
}

// matches reports whether an errorEquals list applies to the error name. States.ALL applies
// to every error and States.TaskFailed to every error but States.Timeout, as in Step Functions.
func matches(errorEquals []string, name string) bool {
	for _, e := range errorEquals {
		switch {
		case e == name, e == serverlessv1.ErrorAll:
			return true
		case e == serverlessv1.ErrorTaskFailed && name != serverlessv1.ErrorTimeout:
			return true
		}
	}
	return false
}
