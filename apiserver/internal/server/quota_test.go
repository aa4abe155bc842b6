package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/quota/quotatest"
)

func quotaPod(name string, requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
}

// measure writes a quota's status as the resourcequota controller would: hard from spec, and
// used.
func (h *harness) measure(ns, name string, used corev1.ResourceList) {
	h.t.Helper()
	path := "/api/v1/namespaces/" + ns + "/resourcequotas/" + name
	var q corev1.ResourceQuota
	h.mustDo(http.StatusOK, "GET", path, "", nil, &q)
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: used}
	h.mustDo(http.StatusOK, "PUT", path+"/status", "", &q, nil)
}

func (h *harness) used(ns, name string) string {
	h.t.Helper()
	var q corev1.ResourceQuota
	h.mustDo(http.StatusOK, "GET", "/api/v1/namespaces/"+ns+"/resourcequotas/"+name, "", nil, &q)
	var parts []string
	for _, n := range []corev1.ResourceName{"count/configmaps", "limits.cpu", "pods", "requests.cpu", "requests.memory", "services.nodeports"} {
		if v, ok := q.Status.Used[n]; ok {
			parts = append(parts, string(n)+"="+v.String())
		}
	}
	return strings.Join(parts, ",")
}

// ResourceQuotas are served as Kubernetes serves them: status cleared on create and written
// through its subresource, validated with upstream's rules and paths, shown as NAME AGE
// REQUEST LIMIT, advertised as quota.
func TestResourceQuotaServed(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	path := "/api/v1/namespaces/" + ns + "/resourcequotas"
	var created corev1.ResourceQuota
	h.mustDo(http.StatusCreated, "POST", path, "", &corev1.ResourceQuota{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec:       corev1.ResourceQuotaSpec{Hard: quotatest.List("pods", "4", "requests.cpu", "2", "limits.memory", "1Gi")},
		Status:     corev1.ResourceQuotaStatus{Used: quotatest.List("pods", "0")}}, &created)
	if created.Status.Used != nil || created.Status.Hard != nil {
		t.Fatalf("status kept on create: %+v", created.Status)
	}
	h.measure(ns, "compute", quotatest.List("pods", "1", "requests.cpu", "500m", "limits.memory", "0"))

	var tbl metav1.Table
	code, _ := h.do("GET", path, "", nil, &tbl, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if code != http.StatusOK || strings.Join(cols, " ") != "Name Age Request Limit" || len(tbl.Rows) != 1 ||
		tbl.Rows[0].Cells[2] != "pods: 1/4, requests.cpu: 500m/2" || tbl.Rows[0].Cells[3] != "limits.memory: 0/1Gi" {
		t.Fatalf("table %d %v %+v", code, cols, tbl.Rows)
	}

	var st metav1.Status
	for _, tc := range []struct {
		spec  corev1.ResourceQuotaSpec
		field string
		msg   string
	}{
		{corev1.ResourceQuotaSpec{Hard: quotatest.List("widgets", "1")}, "spec.hard[widgets]", "must be a standard resource type or fully qualified"},
		{corev1.ResourceQuotaSpec{Hard: quotatest.List("storage", "1Gi")}, "spec.hard[storage]", "must be a standard resource for quota"},
		{corev1.ResourceQuotaSpec{Hard: quotatest.List("pods", "1500m")}, "spec.hard[pods]", "must be an integer"},
		{corev1.ResourceQuotaSpec{Hard: quotatest.List("requests.cpu", "-1")}, "spec.hard[requests.cpu]", "must be greater than or equal to 0"},
		{corev1.ResourceQuotaSpec{Hard: quotatest.List("services", "1"), Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}},
			"spec.scopes", "unsupported scope applied to resource"},
		{corev1.ResourceQuotaSpec{Hard: quotatest.List("pods", "1"), Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort}},
			"spec.scopes", "conflicting scopes"},
	} {
		code, _ := h.do("POST", path, "", &corev1.ResourceQuota{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
			ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: tc.spec}, &st)
		if code != http.StatusUnprocessableEntity || st.Details == nil || len(st.Details.Causes) == 0 ||
			st.Details.Causes[0].Field != tc.field || !strings.Contains(st.Details.Causes[0].Message, tc.msg) {
			t.Errorf("%v: %d %+v", tc.spec, code, st)
		}
	}

	// Scopes never change.
	var q corev1.ResourceQuota
	h.mustDo(http.StatusOK, "GET", path+"/compute", "", nil, &q)
	q.Spec.Hard = quotatest.List("pods", "4")
	q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
	if code, _ := h.do("PUT", path+"/compute", "", &q, &st); code != http.StatusUnprocessableEntity ||
		st.Details == nil || st.Details.Causes[0].Field != "spec.scopes" || !strings.Contains(st.Message, "field is immutable") {
		t.Fatalf("scope change: %d %+v", code, st)
	}

	var list metav1.APIResourceList
	h.mustDo(http.StatusOK, "GET", "/api/v1", "", nil, &list)
	found := map[string]string{}
	for _, r := range list.APIResources {
		if len(r.ShortNames) > 0 {
			found[r.Name] = r.ShortNames[0]
		}
	}
	if found["resourcequotas"] != "quota" || found["limitranges"] != "limits" || found["resourcequotas/status"] != "" {
		t.Fatalf("short names: %v", found)
	}
}

// A LimitRange gives a new pod's containers their defaults, noted in the
// kubernetes.io/limit-ranger annotation, and refuses pods and claims outside its bounds with
// upstream's 403.
func TestLimitRangeAdmission(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	var lr corev1.LimitRange
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/limitranges", "", &corev1.LimitRange{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"}, ObjectMeta: metav1.ObjectMeta{Name: "bounds"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypeContainer, Min: quotatest.List("cpu", "100m"), Max: quotatest.List("cpu", "1"), Default: quotatest.List("memory", "256Mi"),
				DefaultRequest: quotatest.List("memory", "128Mi")},
			{Type: corev1.LimitTypePersistentVolumeClaim, Max: quotatest.List("storage", "10Gi")},
		}}}, &lr)
	// Kubernetes' defaults: the default limit from max, the default request from the default
	// limit (before min).
	if d, r := lr.Spec.Limits[0].Default, lr.Spec.Limits[0].DefaultRequest; d.Cpu().String() != "1" || r.Cpu().String() != "1" {
		t.Fatalf("limit range defaults: default %v, defaultRequest %v", d, r)
	}

	pods := "/api/v1/namespaces/" + ns + "/pods"
	var pod corev1.Pod
	h.mustDo(http.StatusCreated, "POST", pods, "", quotaPod("bare", nil, nil), &pod)
	res := pod.Spec.Containers[0].Resources
	if res.Requests.Cpu().String() != "1" || res.Requests.Memory().String() != "128Mi" || res.Limits.Cpu().String() != "1" || res.Limits.Memory().String() != "256Mi" {
		t.Fatalf("defaults: %+v", res)
	}
	if got, want := pod.Annotations["kubernetes.io/limit-ranger"], "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"; got != want {
		t.Fatalf("annotation %q, want %q", got, want)
	}

	var st metav1.Status
	if code, _ := h.do("POST", pods, "", quotaPod("low", quotatest.List("cpu", "50m"), nil), &st); code != http.StatusForbidden ||
		st.Message != `pods "low" is forbidden: minimum cpu usage per Container is 100m, but request is 50m` || st.Reason != metav1.StatusReasonForbidden {
		t.Fatalf("below min: %d %+v", code, st)
	}
	if code, _ := h.do("POST", pods, "", quotaPod("high", quotatest.List("cpu", "2"), quotatest.List("cpu", "2")), &st); code != http.StatusForbidden ||
		st.Message != `pods "high" is forbidden: maximum cpu usage per Container is 1, but limit is 2` {
		t.Fatalf("above max: %d %+v", code, st)
	}
	claim := map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "big"},
		"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "20Gi"}}}}
	if code, _ := h.do("POST", "/api/v1/namespaces/"+ns+"/persistentvolumeclaims", "", claim, &st); code != http.StatusForbidden ||
		st.Message != `persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi` {
		t.Fatalf("big claim: %d %+v", code, st)
	}

	if code, _ := h.do("POST", "/api/v1/namespaces/"+ns+"/limitranges", "", &corev1.LimitRange{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"}, ObjectMeta: metav1.ObjectMeta{Name: "upside-down"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Min: quotatest.List("cpu", "2"), Max: quotatest.List("cpu", "1")}}},
	}, &st); code != http.StatusUnprocessableEntity || st.Details == nil || st.Details.Causes[0].Field != "spec.limits[0].min[cpu]" ||
		!strings.Contains(st.Message, "min value 2 is greater than max value 1") {
		t.Fatalf("min above max: %d %+v", code, st)
	}
}

// Quota admission charges each admitted object to the quota's status.used before writing it
// and refuses what would exceed the quota, with upstream's messages.
func TestResourceQuotaAdmission(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	quotas := "/api/v1/namespaces/" + ns + "/resourcequotas"
	pods := "/api/v1/namespaces/" + ns + "/pods"
	h.mustDo(http.StatusCreated, "POST", quotas, "", &corev1.ResourceQuota{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec:       corev1.ResourceQuotaSpec{Hard: quotatest.List("pods", "2", "requests.cpu", "1", "limits.cpu", "2")}}, nil)

	// A quota whose status has the limits but not yet the usage of each refuses.
	h.measure(ns, "compute", quotatest.List("pods", "0"))
	var st metav1.Status
	if code, _ := h.do("POST", pods, "", quotaPod("early", quotatest.List("cpu", "100m"), quotatest.List("cpu", "100m")), &st); code != http.StatusForbidden ||
		st.Message != `pods "early" is forbidden: status unknown for quota: compute, resources: limits.cpu,pods,requests.cpu` {
		t.Fatalf("before the quota is measured: %d %q", code, st.Message)
	}
	h.measure(ns, "compute", quotatest.List("pods", "0", "requests.cpu", "0", "limits.cpu", "0"))

	if code, _ := h.do("POST", pods, "", quotaPod("nolimit", quotatest.List("cpu", "100m"), nil), &st); code != http.StatusForbidden ||
		st.Message != `pods "nolimit" is forbidden: failed quota: compute: must specify limits.cpu for: app` {
		t.Fatalf("without limits: %d %q", code, st.Message)
	}
	h.mustDo(http.StatusCreated, "POST", pods, "", quotaPod("a", quotatest.List("cpu", "300m"), quotatest.List("cpu", "600m")), nil)
	if got := h.used(ns, "compute"); got != "limits.cpu=600m,pods=1,requests.cpu=300m" {
		t.Fatalf("used after one pod: %s", got)
	}
	if code, _ := h.do("POST", pods, "", quotaPod("b", quotatest.List("cpu", "800m"), quotatest.List("cpu", "800m")), &st); code != http.StatusForbidden ||
		st.Message != `pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=800m, used: requests.cpu=300m, limited: requests.cpu=1` {
		t.Fatalf("over requests.cpu: %d %q", code, st.Message)
	}
	// A dry run is judged but charges nothing.
	h.mustDo(http.StatusCreated, "POST", pods+"?dryRun=All", "", quotaPod("dry", quotatest.List("cpu", "100m"), quotatest.List("cpu", "100m")), nil)
	h.mustDo(http.StatusCreated, "POST", pods, "", quotaPod("c", quotatest.List("cpu", "100m"), quotatest.List("cpu", "100m")), nil)
	if got := h.used(ns, "compute"); got != "limits.cpu=700m,pods=2,requests.cpu=400m" {
		t.Fatalf("used after two pods: %s", got)
	}
	if code, _ := h.do("POST", pods, "", quotaPod("d", quotatest.List("cpu", "100m"), quotatest.List("cpu", "100m")), &st); code != http.StatusForbidden ||
		st.Message != `pods "d" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2` {
		t.Fatalf("over pods: %d %q", code, st.Message)
	}

	// An update that adds node ports is charged for them.
	h.mustDo(http.StatusCreated, "POST", quotas, "", &corev1.ResourceQuota{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Name: "ports"}, Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("services.nodeports", "1")}}, nil)
	h.measure(ns, "ports", quotatest.List("services.nodeports", "0"))
	services := "/api/v1/namespaces/" + ns + "/services"
	var svc corev1.Service
	h.mustDo(http.StatusCreated, "POST", services, "", map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"ports": []any{map[string]any{"name": "a", "port": 80}, map[string]any{"name": "b", "port": 81}}}}, &svc)
	svc.Spec.Type = corev1.ServiceTypeNodePort
	if code, _ := h.do("PUT", services+"/web", "", &svc, &st); code != http.StatusForbidden ||
		st.Message != `services "web" is forbidden: exceeded quota: ports, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1` {
		t.Fatalf("node port update: %d %q", code, st.Message)
	}
}

// A write the quota admitted but that fails gives its charge back.
func TestResourceQuotaChargeGivenBackOnFailedWrite(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/resourcequotas", "", &corev1.ResourceQuota{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"}, ObjectMeta: metav1.ObjectMeta{Name: "objects"},
		Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("count/configmaps", "3")}}, nil)
	h.measure(ns, "objects", quotatest.List("count/configmaps", "0"))
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "one"}}
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/configmaps", "", cm, nil)
	h.mustDo(http.StatusConflict, "POST", "/api/v1/namespaces/"+ns+"/configmaps", "", cm, nil)
	if got := h.used(ns, "objects"); got != "count/configmaps=1" {
		t.Fatalf("used after a create and a conflict: %s, want count/configmaps=1", got)
	}
}

// Creates racing for the last of a quota, through two apiservers over one etcd, never get
// more than the quota allows.
func TestResourceQuotaConcurrentCreates(t *testing.T) {
	h1, h2 := newHarness(t), newHarness(t)
	ns := h1.namespace()
	const hard = 5
	h1.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/resourcequotas", "", &corev1.ResourceQuota{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"}, ObjectMeta: metav1.ObjectMeta{Name: "objects"},
		Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("configmaps", fmt.Sprint(hard))}}, nil)
	h1.measure(ns, "objects", quotatest.List("configmaps", "0"))

	const tries = 24
	codes := make([]int, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := h1
			if i%2 == 1 {
				h = h2
			}
			var st metav1.Status
			codes[i], _ = h.do("POST", "/api/v1/namespaces/"+ns+"/configmaps", "", map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprintf("cm-%d", i)}}, &st)
			if codes[i] == http.StatusForbidden && !strings.Contains(st.Message, "exceeded quota: objects") {
				t.Errorf("refusal %q", st.Message)
			}
		}()
	}
	wg.Wait()
	created := 0
	for _, c := range codes {
		switch c {
		case http.StatusCreated:
			created++
		case http.StatusForbidden:
		default:
			t.Errorf("create answered %d", c)
		}
	}
	var list corev1.ConfigMapList
	h1.mustDo(http.StatusOK, "GET", "/api/v1/namespaces/"+ns+"/configmaps", "", nil, &list)
	if created != hard || len(list.Items) != hard {
		t.Fatalf("%d creates succeeded and %d configmaps exist, want %d", created, len(list.Items), hard)
	}
	var q corev1.ResourceQuota
	h1.mustDo(http.StatusOK, "GET", "/api/v1/namespaces/"+ns+"/resourcequotas/objects", "", nil, &q)
	if used := q.Status.Used["configmaps"]; used.Value() != hard {
		t.Fatalf("used %s, want %d", used.String(), hard)
	}
}

// A namespace seen without LimitRanges or quotas is not read again for a moment, but the
// first of either written through the apiserver holds for the very next create.
func TestPoliciesWrittenAfterAnEmptyNamespace(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	pods := "/api/v1/namespaces/" + ns + "/pods"
	h.mustDo(http.StatusCreated, "POST", pods, "", quotaPod("first", nil, nil), nil)
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/limitranges", "", &corev1.LimitRange{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"}, ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: quotatest.List("memory", "256Mi"), DefaultRequest: quotatest.List("memory", "128Mi")}}}}, nil)
	var pod corev1.Pod
	h.mustDo(http.StatusCreated, "POST", pods, "", quotaPod("second", nil, nil), &pod)
	if got := pod.Spec.Containers[0].Resources.Requests.Memory().String(); got != "128Mi" {
		t.Fatalf("a pod created right after the first LimitRange got memory request %s, want its default 128Mi", got)
	}
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/resourcequotas", "", &corev1.ResourceQuota{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"}, ObjectMeta: metav1.ObjectMeta{Name: "count"},
		Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("configmaps", "0")}}, nil)
	h.measure(ns, "count", quotatest.List("configmaps", "0"))
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	if code, _ := h.do("POST", "/api/v1/namespaces/"+ns+"/configmaps", "", cm, nil); code != http.StatusForbidden {
		t.Fatalf("a configmap created right after a quota of none: %d, want 403", code)
	}
}
