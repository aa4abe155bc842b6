package web

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// logTail is how many lines of a container's log the pods page shows.
const logTail = 100

type containerRow struct {
	Name, Image, State string
	Ready              bool
	Restarts           int32
}

type podRow struct {
	Namespace, Name, Phase, Node, IP string
	Ready, Total                     int
	Restarts                         int32
	Containers                       []containerRow
	Age                              time.Duration
}

type podsData struct {
	Namespaces []string
	Namespace  string
	Pods       []podRow
	// Selected is the pod chosen for plots and logs (nil: none), Container the container
	// whose log is shown, Log its tail.
	Selected  *podRow
	Container string
	Log       string
}

func (s *Server) pods(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	p := &page{}
	d := podsData{Namespace: r.URL.Query().Get("namespace")}
	if l, err := s.cfg.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		p.fail("list namespaces", err)
	} else {
		for _, n := range l.Items {
			d.Namespaces = append(d.Namespaces, n.Name)
		}
		slices.Sort(d.Namespaces)
	}
	l, err := s.cfg.Kube.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		p.fail("list pods", err)
		l = &corev1.PodList{}
	}
	for i := range l.Items {
		d.Pods = append(d.Pods, s.podRow(&l.Items[i]))
	}
	slices.SortFunc(d.Pods, func(a, b podRow) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if name := r.URL.Query().Get("pod"); name != "" && d.Namespace != "" {
		for i := range d.Pods {
			if d.Pods[i].Name == name {
				d.Selected = &d.Pods[i]
			}
		}
		if d.Selected == nil {
			p.fail("pod", fmt.Errorf("%s/%s not found", d.Namespace, name))
		} else {
			d.Container = r.URL.Query().Get("container")
			if d.Container == "" && len(d.Selected.Containers) > 0 {
				d.Container = d.Selected.Containers[0].Name
			}
			text, err := s.tail(r, d.Namespace, name, d.Container)
			if err != nil {
				p.fail("log", err)
			}
			d.Log = text
		}
	}
	p.Data = d
	s.render(w, "pods", p)
}

func (s *Server) podRow(pod *corev1.Pod) podRow {
	row := podRow{Namespace: pod.Namespace, Name: pod.Name, Phase: string(pod.Status.Phase), Node: pod.Spec.NodeName,
		IP: pod.Status.PodIP, Total: len(pod.Spec.Containers), Age: s.age(pod.CreationTimestamp)}
	if pod.DeletionTimestamp != nil {
		row.Phase = "Terminating"
	}
	statuses := map[string]corev1.ContainerStatus{}
	for _, cs := range pod.Status.ContainerStatuses {
		statuses[cs.Name] = cs
	}
	for _, c := range pod.Spec.Containers {
		cr := containerRow{Name: c.Name, Image: c.Image, State: "Waiting"}
		if cs, ok := statuses[c.Name]; ok {
			cr.Ready, cr.Restarts = cs.Ready, cs.RestartCount
			switch {
			case cs.State.Running != nil:
				cr.State = "Running"
			case cs.State.Terminated != nil:
				cr.State = "Terminated: " + cs.State.Terminated.Reason
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				cr.State = "Waiting: " + cs.State.Waiting.Reason
			}
		}
		if cr.Ready {
			row.Ready++
		}
		row.Restarts += cr.Restarts
		row.Containers = append(row.Containers, cr)
	}
	return row
}

// tail reads the last lines of a container's log through the pods/log API.
func (s *Server) tail(r *http.Request, namespace, pod, container string) (string, error) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	lines := int64(logTail)
	if v, err := strconv.ParseInt(r.URL.Query().Get("tail"), 10, 64); err == nil && v > 0 && v <= 5000 {
		lines = v
	}
	stream, err := s.cfg.Kube.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &lines}).Stream(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of %s/%s %s: %w", namespace, pod, container, err)
	}
	defer stream.Close()
	b, err := io.ReadAll(io.LimitReader(stream, 1<<20))
	if err != nil {
		return string(b), fmt.Errorf("logs of %s/%s %s: %w", namespace, pod, container, err)
	}
	return string(b), nil
}

// podLog answers a container's log tail as text, for links and scripts.
func (s *Server) podLog(w http.ResponseWriter, r *http.Request) {
	text, err := s.tail(r, r.PathValue("namespace"), r.PathValue("name"), r.URL.Query().Get("container"))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	io.WriteString(w, text)
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
