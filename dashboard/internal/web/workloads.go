package web

import (
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workloadRow is one controller of the workloads page: Ready of Desired, and a word on the rest.
type workloadRow struct {
	Namespace, Name string
	Ready, Desired  int32
	Detail          string
	Age             time.Duration
}

// OK says whether every desired replica is ready (a Job: has completed).
func (w workloadRow) OK() bool { return w.Ready >= w.Desired }

type workloadsData struct {
	Deployments, StatefulSets, DaemonSets, Jobs []workloadRow
}

func (s *Server) workloads(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	p := &page{}
	d := workloadsData{}
	apps := s.cfg.Kube.AppsV1()
	if l, err := apps.Deployments("").List(ctx, metav1.ListOptions{}); err != nil {
		p.fail("list deployments", err)
	} else {
		for _, o := range l.Items {
			d.Deployments = append(d.Deployments, workloadRow{o.Namespace, o.Name, o.Status.ReadyReplicas, replicas(o.Spec.Replicas),
				sprintf("%d up to date, %d available", o.Status.UpdatedReplicas, o.Status.AvailableReplicas), s.age(o.CreationTimestamp)})
		}
	}
	if l, err := apps.StatefulSets("").List(ctx, metav1.ListOptions{}); err != nil {
		p.fail("list statefulsets", err)
	} else {
		for _, o := range l.Items {
			d.StatefulSets = append(d.StatefulSets, workloadRow{o.Namespace, o.Name, o.Status.ReadyReplicas, replicas(o.Spec.Replicas),
				sprintf("%d current, %d updated", o.Status.CurrentReplicas, o.Status.UpdatedReplicas), s.age(o.CreationTimestamp)})
		}
	}
	if l, err := apps.DaemonSets("").List(ctx, metav1.ListOptions{}); err != nil {
		p.fail("list daemonsets", err)
	} else {
		for _, o := range l.Items {
			d.DaemonSets = append(d.DaemonSets, workloadRow{o.Namespace, o.Name, o.Status.NumberReady, o.Status.DesiredNumberScheduled,
				sprintf("%d scheduled, %d available", o.Status.CurrentNumberScheduled, o.Status.NumberAvailable), s.age(o.CreationTimestamp)})
		}
	}
	if l, err := s.cfg.Kube.BatchV1().Jobs("").List(ctx, metav1.ListOptions{}); err != nil {
		p.fail("list jobs", err)
	} else {
		for _, o := range l.Items {
			d.Jobs = append(d.Jobs, workloadRow{o.Namespace, o.Name, o.Status.Succeeded, replicas(o.Spec.Completions),
				sprintf("%d active, %d failed", o.Status.Active, o.Status.Failed), s.age(o.CreationTimestamp)})
		}
	}
	p.Data = d
	s.render(w, "workloads", p)
}

// replicas reads an optional count, whose default is one.
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}
