package v1

// Labels the serverless component puts on what it makes for a function.
const (
	// LabelFunction names the Function a Deployment, its pods or an image belong to.
	LabelFunction = GroupName + "/function"
	// LabelVersion is the Function's status.version the pod or image runs.
	LabelVersion = GroupName + "/version"
)

// The runtime contract between the gateway and a function pod (images/python-runtime).
const (
	// RuntimePort is the port the runtime serves on inside the pod.
	RuntimePort = 8080
	// RuntimeInvokePath takes POST with the JSON event; 200 answers the handler's JSON result,
	// 500 a RuntimeError (the handler raised), 400 a body that is not JSON.
	RuntimeInvokePath = "/invoke"
	// RuntimeHealthPath answers 200 while the server runs (liveness).
	RuntimeHealthPath = "/healthz"
	// RuntimeReadyPath answers 200 once the handler's module is imported (readiness).
	RuntimeReadyPath = "/readyz"
	// HeaderServedBy names the pod that answered (the runtime sets it, the gateway passes it on).
	HeaderServedBy = "X-Served-By"
	// EnvHandler tells the runtime which "module.function" to call.
	EnvHandler = "FUNCTION_HANDLER"
)

// RuntimeError is the body of a call whose handler raised.
type RuntimeError struct {
	// Error is "<ExceptionType>: <message>".
	Error string `json:"error"`
	// Traceback is the tail of the Python traceback.
	Traceback string `json:"traceback,omitempty"`
}
