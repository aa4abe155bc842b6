package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/kubeletclient"
	"minik8s.io/shared/scheme"
)

// KubeletClient reaches kubelets for pod logs, exec, attach and port-forward.
type KubeletClient struct {
	HTTP  *http.Client
	Token string
}

// logParams are the query parameters of pods/<name>/log passed to the kubelet.
var logParams = []string{"follow", "tailLines", "timestamps", "previous", "sinceSeconds", "limitBytes"}

// podLog proxies pods/<name>/log to the kubelet of the pod's node.
func (s *Server) podLog(c *gin.Context, t target) {
	ctx := c.Request.Context()
	obj, _, err := s.reg.Read(ctx, target{res: t.res, namespace: t.namespace, name: t.name}.key())
	if err != nil {
		writeError(c, err)
		return
	}
	pod := obj.(*corev1.Pod)
	container := c.Query("container")
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			names := make([]string, len(pod.Spec.Containers))
			for i, ct := range pod.Spec.Containers {
				names[i] = ct.Name
			}
			writeError(c, apierror.New(apierror.ErrBadRequest, "a container name must be specified for pod %s, choose one of: [%s]", t.name, strings.Join(names, " ")))
			return
		}
		container = pod.Spec.Containers[0].Name
	}
	if pod.Spec.NodeName == "" {
		writeError(c, apierror.New(apierror.ErrBadRequest, "pod %s does not have a host assigned", t.name))
		return
	}
	u, err := s.kubeletURL(ctx, pod.Spec.NodeName)
	if err != nil {
		writeError(c, err)
		return
	}
	u.Path = fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container)
	q := url.Values{}
	for _, p := range logParams {
		if v := c.Query(p); v != "" {
			q.Set(p, v)
		}
	}
	u.RawQuery = q.Encode()
	if s.cfg.Kubelet == nil {
		writeError(c, apierror.New(apierror.ErrUnavailable, "no kubelet client is configured on this apiserver"))
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		writeError(c, err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.Kubelet.Token)
	resp, err := s.cfg.Kubelet.HTTP.Do(req)
	if err != nil {
		writeError(c, apierror.New(apierror.ErrUnavailable, "cannot reach the kubelet of node %s: %v", pod.Spec.NodeName, err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		writeError(c, kubeletError(resp))
		return
	}
	c.Header("Content-Type", "text/plain")
	c.Status(http.StatusOK)
	// Headers go out at once, so `logs -f` of a quiet container shows it is streaming.
	c.Writer.WriteHeaderNow()
	c.Writer.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := c.Writer.Write(buf[:n]); werr != nil {
				return
			}
			c.Writer.Flush()
		}
		if err != nil {
			return
		}
	}
}

// kubeletURL is the HTTPS endpoint of a node's kubelet, from the node's status.
func (s *Server) kubeletURL(ctx context.Context, node string) (*url.URL, error) {
	nodes, _ := scheme.Lookup("nodes")
	obj, _, err := s.reg.Read(ctx, target{res: nodes, name: node}.key())
	if err != nil {
		return nil, err
	}
	return kubeletURLOf(obj.(*corev1.Node))
}

// kubeletURLOf is the HTTPS endpoint of a node's kubelet (kubeletclient.URL), unavailable
// when the node reports none.
func kubeletURLOf(n *corev1.Node) (*url.URL, error) {
	u, err := kubeletclient.URL(n)
	if err != nil {
		return nil, apierror.New(apierror.ErrUnavailable, "%v", err)
	}
	return u, nil
}

// DefaultKubeletTimeout bounds dialing a kubelet; streams themselves are unbounded.
const DefaultKubeletTimeout = 5 * time.Second

// kubeletError turns a kubelet's refusal (plain text, as kubelets write it) into the API error
// the client gets: a Status with the kubelet's message.
func kubeletError(resp *http.Response) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	text := strings.TrimSpace(string(msg))
	if mediaType(resp.Header.Get("Content-Type")) == jsonMediaType {
		var st metav1.Status
		if json.Unmarshal(msg, &st) == nil && st.Kind == "Status" {
			return apierror.FromStatus(&st)
		}
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		return apierror.New(apierror.ErrNotFound, "%s", text)
	case http.StatusUnauthorized, http.StatusForbidden:
		return apierror.New(apierror.ErrUnavailable, "the kubelet refused the apiserver's credentials: %s", text)
	}
	if resp.StatusCode >= 500 {
		return apierror.New(apierror.ErrUnavailable, "%s", text)
	}
	return apierror.New(apierror.ErrBadRequest, "%s", text)
}
