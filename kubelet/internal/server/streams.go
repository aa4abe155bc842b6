package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/streaming"
)

// exec runs a command in a running container: /exec/{namespace}/{pod}/{container}?command=...
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	opts, err := streaming.ExecOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, ok := s.runningContainer(w, r)
	if !ok {
		return
	}
	s.cfg.Logger.Debug("exec", "pod", r.PathValue("namespace")+"/"+r.PathValue("pod"),
		"container", r.PathValue("container"), "command", opts.Command)
	s.streams.ServeCommand(w, r, opts, func(ctx context.Context, st runtime.Streams) error {
		code, err := s.cfg.Runtime.ExecStream(ctx, c.ID, opts.Command, st)
		if err != nil {
			return err
		}
		if code != 0 {
			return streaming.ExitError{Code: code}
		}
		return nil
	})
}

// attach connects to a running container's main process: /attach/{namespace}/{pod}/{container}.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	opts, err := streaming.AttachOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, ok := s.runningContainer(w, r)
	if !ok {
		return
	}
	if opts.Stdin && !c.Stdin {
		http.Error(w, fmt.Sprintf("container %q in pod %q was not created with stdin: true, so it has no input to attach to",
			r.PathValue("container"), r.PathValue("pod")), http.StatusBadRequest)
		return
	}
	s.streams.ServeCommand(w, r, opts, func(ctx context.Context, st runtime.Streams) error {
		return s.cfg.Runtime.Attach(ctx, c.ID, st)
	})
}

// runningContainer finds the container a request names and answers 404 when the pod has no
// such container, 400 when it is not running.
func (s *Server) runningContainer(w http.ResponseWriter, r *http.Request) (runtime.Container, bool) {
	ns, pod, ctr := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	id, err := s.cfg.Containers.ContainerID(r.Context(), ns, pod, ctr, false)
	if errors.Is(err, runtime.ErrNotFound) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q of namespace %q", ctr, pod, ns), http.StatusNotFound)
		return runtime.Container{}, false
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return runtime.Container{}, false
	}
	c, err := s.cfg.Runtime.Inspect(r.Context(), id)
	if errors.Is(err, runtime.ErrNotFound) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q of namespace %q", ctr, pod, ns), http.StatusNotFound)
		return runtime.Container{}, false
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return runtime.Container{}, false
	}
	if c.State != runtime.StateRunning {
		http.Error(w, fmt.Sprintf("container %q in pod %q is not running (%s)", ctr, pod, c.State), http.StatusBadRequest)
		return runtime.Container{}, false
	}
	return c, true
}

// portForward forwards connections to the pod's ports: /portForward/{namespace}/{pod}. It
// dials 127.0.0.1 in the pod's network namespace, as a process of the pod would.
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	ns, pod := r.PathValue("namespace"), r.PathValue("pod")
	id, err := s.cfg.Containers.SandboxID(r.Context(), ns, pod)
	if errors.Is(err, runtime.ErrNotFound) {
		http.Error(w, fmt.Sprintf("pod %q of namespace %q has no running sandbox on this node", pod, ns), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	path, err := s.cfg.Runtime.NetNS(r.Context(), id)
	switch {
	case errors.Is(err, runtime.ErrNotFound), errors.Is(err, runtime.ErrNotRunning):
		http.Error(w, fmt.Sprintf("pod %q of namespace %q is not running: %v", pod, ns, err), http.StatusBadRequest)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.cfg.Logger.Debug("port-forward", "pod", ns+"/"+pod)
	s.streams.ServePortForward(w, r, func(ctx context.Context, port uint16) (net.Conn, error) {
		return s.cfg.DialNetNS(ctx, path, port)
	})
}
