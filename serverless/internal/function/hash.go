package function

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// DefaultRuntime is the runtime of a Function that names none.
const DefaultRuntime = "python3"

// SourceHash identifies what an image of fn is built from: runtime, handler, source files and
// requirements. Anything else in the spec (scale, env, resources, schedules) changes the
// Deployment, never the image, so it is left out.
func SourceHash(spec *serverlessv1.FunctionSpec) string {
	h := sha256.New()
	field := func(s string) {
		// Length-prefixed, so no two different inputs concatenate to the same bytes.
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	runtime := spec.Runtime
	if runtime == "" {
		runtime = DefaultRuntime
	}
	field(runtime)
	field(spec.Handler)
	names := make([]string, 0, len(spec.Source))
	for n := range spec.Source {
		names = append(names, n)
	}
	slices.Sort(names)
	field(strconv.Itoa(len(names)))
	for _, n := range names {
		field(n)
		field(spec.Source[n])
	}
	field(spec.Requirements)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ImageRepository is the repository of every image of the function namespace/name.
func ImageRepository(namespace, name string) string {
	return "minik8s-fn/" + namespace + "." + name
}

// ImageName is the image of one version of a function.
func ImageName(namespace, name string, version int64) string {
	return fmt.Sprintf("%s:v%d", ImageRepository(namespace, name), version)
}

// ParseImage splits a function image name into its function and version; ok is false for
// any other image.
func ParseImage(image string) (namespace, name string, version int64, ok bool) {
	repo, tag, found := strings.Cut(strings.TrimPrefix(image, "docker.io/"), ":")
	if !found || !strings.HasPrefix(repo, "minik8s-fn/") || !strings.HasPrefix(tag, "v") {
		return "", "", 0, false
	}
	namespace, name, found = strings.Cut(strings.TrimPrefix(repo, "minik8s-fn/"), ".")
	if !found || namespace == "" || name == "" {
		return "", "", 0, false
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(tag, "v"), 10, 64)
	if err != nil || v <= 0 {
		return "", "", 0, false
	}
	return namespace, name, v, true
}
