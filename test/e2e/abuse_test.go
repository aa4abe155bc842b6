package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/abuse"
	"minik8s.io/shared/client"
)

// makeUpNamespace creates a namespace of its own on the make up cluster for the test, deleted
// when it ends.
func (c *makeUpCluster) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000)
	namespaces := client.MustFor[*corev1.Namespace, *corev1.NamespaceList](c.cl)
	if _, err := namespaces.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := namespaces.Delete(ctx, "", ns, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	return ns
}

// target is the make up apiserver as the abuse package sends to it.
func (c *makeUpCluster) target(t *testing.T) abuse.Target {
	t.Helper()
	cfg, err := client.FromKubeconfig(c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Server)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		t.Fatalf("the kubeconfig %s holds no CA certificate", c.kubeconfig)
	}
	return abuse.Target{Addr: u.Host, Token: cfg.Token, TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, ServerName: u.Hostname()}}
}

// TestBadRequestsAnswered sends a few thousand malformed writes (wrong types, truncated JSON,
// wrong content types, empty, large and oversized bodies, invalid names; POST, PUT, PATCH and
// DELETE; one in ten from a client slow to send its body) to make up's apiserver, each on a
// fresh TLS connection, then again over kept-alive ones. Every one gets its answer, a 4xx.
func TestBadRequestsAnswered(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-badreq")
	tg := c.target(t)
	reqs := abuse.Generate(uint64(time.Now().UnixNano()), 2000, 10, ns)
	for _, keepAlive := range []bool{false, true} {
		name := "fresh connections"
		if keepAlive {
			name = "kept-alive connections"
		}
		t.Run(name, func(t *testing.T) {
			tally := abuse.Send(t.Context(), tg, reqs, keepAlive, 16)
			t.Logf("%d sent on %d connections in %s: %d answered (%s)", tally.Sent, tally.Connections,
				tally.Elapsed.Round(time.Millisecond), tally.Answered, tally.Codes())
			for i, r := range tally.Unanswered {
				if i == 10 {
					t.Errorf("... and %d more without an answer", len(tally.Unanswered)-i)
					break
				}
				t.Errorf("no answer to %s: %v", r.Request, r.Err)
			}
			for code, n := range tally.ByCode {
				if code < 400 || code > 499 {
					t.Errorf("%d answers were %d, want only 4xx for bad requests", n, code)
				}
			}
		})
	}
	// Nothing malformed was stored.
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](c.cl)
	if list, err := pods.List(t.Context(), ns, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("pods in %s after the bad requests: %v (err %v), want none", ns, len(list.Items), err)
	}
}

// TestFailingPodsStorm starts 20 pods whose command is missing from the image and 20 whose
// container exits 1 at once, on make up's node. While they fail, a pod already running keeps
// answering, new good pods reach Running, and each failing pod is restarted no faster than the
// back-off allows and shows why it fails as Kubernetes does.
func TestFailingPodsStorm(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-storm")
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](c.cl)
	ctx := t.Context()
	create := func(p *corev1.Pod) {
		t.Helper()
		p.Namespace = ns
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
	running := func(name string) (*corev1.Pod, bool) {
		p, err := pods.Get(ctx, ns, name, metav1.GetOptions{})
		return p, err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
	}
	goodPod := func(name, image string, command ...string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image, Command: command, ImagePullPolicy: corev1.PullIfNotPresent}}}}
	}

	create(goodPod("neighbour", "minik8s/echo:1.0"))
	var neighbourIP string
	eventually(t, 2*time.Minute, "the neighbour pod running", func() bool {
		p, ok := running("neighbour")
		if ok {
			neighbourIP = p.Status.PodIP
		}
		return ok
	})

	// The neighbour is asked every 200 ms through the storm.
	var asked, failed atomic.Int64
	var lastErr atomic.Value
	stopAsking := make(chan struct{})
	var asking sync.WaitGroup
	asking.Add(1)
	go func() {
		defer asking.Done()
		hc := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-stopAsking:
				return
			case <-time.After(200 * time.Millisecond):
			}
			asked.Add(1)
			resp, err := hc.Get("http://" + neighbourIP + ":8080/")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil {
				failed.Add(1)
				lastErr.Store(err.Error())
			}
		}
	}()

	start := time.Now()
	for _, p := range abuse.StormPods(ns, 20) {
		create(p)
	}
	// A good pod every 5 s for a minute, each waited for.
	var starts []time.Duration
	for i := range 12 {
		name := fmt.Sprintf("good-%d", i)
		created := time.Now()
		create(goodPod(name, "minik8s/busybox:1.0", "sleep", "3600"))
		eventually(t, 2*time.Minute, name+" running during the storm", func() bool { _, ok := running(name); return ok })
		starts = append(starts, time.Since(created).Round(10*time.Millisecond))
		time.Sleep(time.Until(created.Add(5 * time.Second)))
	}
	close(stopAsking)
	asking.Wait()
	t.Logf("good pods created to Running during the storm: %v", starts)
	if n := failed.Load(); n != 0 {
		t.Errorf("the neighbour pod failed %d of %d requests during the storm (last: %v)", n, asked.Load(), lastErr.Load())
	}

	list, err := pods.List(ctx, ns, metav1.ListOptions{LabelSelector: abuse.StormLabel})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := int(time.Since(start).Seconds())
	if len(list.Items) != 40 {
		t.Fatalf("%d storm pods, want 40", len(list.Items))
	}
	for _, p := range list.Items {
		if len(p.Status.ContainerStatuses) != 1 {
			t.Errorf("pod %s has container statuses %+v, want one", p.Name, p.Status.ContainerStatuses)
			continue
		}
		cs := p.Status.ContainerStatuses[0]
		why := fmt.Sprintf("pod %s (%s): restartCount %d, state %+v, lastState %+v", p.Name, p.Labels[abuse.StormLabel],
			cs.RestartCount, cs.State, cs.LastTerminationState)
		// Started at least at the back-off's pace (the first restart is immediate, the next
		// after 10 s), never faster than it allows.
		if most := abuse.MaxRestarts(elapsed); cs.RestartCount < 2 || int(cs.RestartCount) > most {
			t.Errorf("%s: want 2 to %d restarts in %d s", why, most, elapsed)
		}
		lt := cs.LastTerminationState.Terminated
		waiting := cs.State.Waiting
		switch p.Labels[abuse.StormLabel] {
		case abuse.MissingCommand:
			if lt == nil || lt.Reason != "StartError" || lt.ExitCode == 0 || !strings.Contains(lt.Message, `"sleep"`) {
				t.Errorf("%s: want the last termination a StartError naming the missing command", why)
			}
			if waiting == nil || (waiting.Reason != "CrashLoopBackOff" && waiting.Reason != "RunContainerError") {
				t.Errorf("%s: want waiting in CrashLoopBackOff or RunContainerError", why)
			}
		case abuse.ExitAtOnce:
			if lt == nil || lt.Reason != "Error" || lt.ExitCode != 1 {
				t.Errorf("%s: want the last termination Error with exit code 1", why)
			}
			if cs.State.Running == nil && (waiting == nil || waiting.Reason != "CrashLoopBackOff") {
				t.Errorf("%s: want running or waiting in CrashLoopBackOff", why)
			}
		}
		if waiting != nil && waiting.Reason == "CrashLoopBackOff" && !strings.HasPrefix(waiting.Message, "back-off ") {
			t.Errorf("%s: CrashLoopBackOff's message should say the back-off", why)
		}
	}

	// Each failure is one event with a count, not one per attempt.
	events := client.MustFor[*corev1.Event, *corev1.EventList](c.cl)
	evs, err := events.List(ctx, ns, metav1.ListOptions{FieldSelector: "involvedObject.name=missing-0"})
	if err != nil {
		t.Fatal(err)
	}
	var failedCount, backOffs int32
	for _, e := range evs.Items {
		switch e.Reason {
		case "Failed":
			failedCount = max(failedCount, e.Count)
		case "BackOff":
			backOffs++
		}
	}
	if failedCount < 2 || backOffs == 0 {
		t.Errorf("events of missing-0: the largest count of a Failed event is %d (want one event counting every attempt), %d BackOff events (want one):\n%+v",
			failedCount, backOffs, evs.Items)
	}
}
