package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/shared/apierror"
)

// podStream proxies pods/<name>/exec, attach and portforward to the kubelet of the pod's node.
// The client's connection upgrade (WebSocket, or SPDY) is passed through untouched: the
// kubelet speaks every protocol kubectl and client-go offer, so the apiserver only checks
// the request, names the kubelet's endpoint, and authenticates itself to it.
func (s *Server) podStream(c *gin.Context, t target) {
	ctx := c.Request.Context()
	if s.cfg.Kubelet == nil {
		writeError(c, apierror.New(apierror.ErrUnavailable, "no kubelet client is configured on this apiserver"))
		return
	}
	obj, _, err := s.reg.Read(ctx, target{res: t.res, namespace: t.namespace, name: t.name}.key())
	if err != nil {
		writeError(c, err)
		return
	}
	pod := obj.(*corev1.Pod)
	q := c.Request.URL.Query()
	var path string
	out := url.Values{}
	switch t.subresource {
	case "exec", "attach":
		container, err := streamContainer(pod, q.Get("container"))
		if err != nil {
			writeError(c, err)
			return
		}
		if t.subresource == "exec" && len(q["command"]) == 0 {
			writeError(c, apierror.New(apierror.ErrBadRequest, "you must specify at least 1 command"))
			return
		}
		// The kubelet's names for the stream flags, as kube-apiserver translates them.
		for param, kubelet := range map[string]string{"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"} {
			if v, ok := q[param]; ok && len(v) > 0 && queryBool(v[0]) {
				out.Set(kubelet, "1")
			}
		}
		if out.Get("input") == "" && out.Get("output") == "" && out.Get("error") == "" {
			writeError(c, apierror.New(apierror.ErrBadRequest, "you must specify at least 1 of stdin, stdout, stderr"))
			return
		}
		if t.subresource == "exec" {
			out["command"] = q["command"]
		}
		path = fmt.Sprintf("/%s/%s/%s/%s", t.subresource, pod.Namespace, pod.Name, container)
	case "portforward":
		if err := podRunning(pod); err != nil {
			writeError(c, err)
			return
		}
		if ports := q["ports"]; len(ports) > 0 {
			out["ports"] = ports
		}
		path = fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name)
	}
	if pod.Spec.NodeName == "" {
		writeError(c, apierror.New(apierror.ErrBadRequest, "pod %s does not have a host assigned", pod.Name))
		return
	}
	u, err := s.kubeletURL(ctx, pod.Spec.NodeName)
	if err != nil {
		writeError(c, err)
		return
	}
	u.Path, u.RawQuery = path, out.Encode()
	node := pod.Spec.NodeName
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = u
			pr.Out.Host = u.Host
			// The caller's credentials are the apiserver's business; the kubelet sees the
			// apiserver's own.
			pr.Out.Header.Set("Authorization", "Bearer "+s.cfg.Kubelet.Token)
		},
		Transport: s.cfg.Kubelet.HTTP.Transport,
		// A refusal before the upgrade becomes a Status, which kubectl prints; the kubelet
		// writes plain text.
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode < 400 {
				return nil
			}
			st := apierror.ToStatus(kubeletError(resp))
			_ = resp.Body.Close()
			body, err := json.Marshal(st)
			if err != nil {
				return err
			}
			resp.StatusCode = int(st.Code)
			resp.Header = http.Header{"Content-Type": {jsonMediaType}, "Content-Length": {strconv.Itoa(len(body))}}
			resp.ContentLength = int64(len(body))
			resp.Body = io.NopCloser(bytes.NewReader(body))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(c, apierror.New(apierror.ErrUnavailable, "cannot reach the kubelet of node %s: %v", node, err))
		},
	}
	proxy.ServeHTTP(c.Writer, c.Request)
}

// streamContainer resolves the container an exec or attach names (the only one when none is
// named) and checks that it can run a command now.
func streamContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) != 1 {
			names := make([]string, len(pod.Spec.Containers))
			for i, ct := range pod.Spec.Containers {
				names[i] = ct.Name
			}
			return "", apierror.New(apierror.ErrBadRequest, "a container name must be specified for pod %s, choose one of: [%s]", pod.Name, strings.Join(names, " "))
		}
		name = pod.Spec.Containers[0].Name
	}
	known := false
	for _, ct := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		known = known || ct.Name == name
	}
	for _, ct := range pod.Spec.EphemeralContainers {
		known = known || ct.Name == name
	}
	if !known {
		return "", apierror.New(apierror.ErrBadRequest, "container %s is not valid for pod %s", name, pod.Name)
	}
	return name, containerRunning(pod, name)
}

// containerRunning refuses an exec or attach into a container that does not run now.
func containerRunning(pod *corev1.Pod, name string) error {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return apierror.New(apierror.ErrBadRequest, "cannot exec into or attach to a container in a completed pod; current phase is %s", pod.Status.Phase)
	}
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, st := range append(statuses, pod.Status.EphemeralContainerStatuses...) {
		if st.Name == name && st.State.Running != nil {
			return nil
		}
	}
	return apierror.New(apierror.ErrBadRequest, "container %s in pod %s is not running; the pod's phase is %s", name, pod.Name, pod.Status.Phase)
}

// podRunning refuses a port-forward into a pod that does not run.
func podRunning(pod *corev1.Pod) error {
	if pod.Status.Phase != corev1.PodRunning {
		return apierror.New(apierror.ErrBadRequest, "cannot port-forward to pod %s: it is not running; current phase is %s", pod.Name, pod.Status.Phase)
	}
	return nil
}
