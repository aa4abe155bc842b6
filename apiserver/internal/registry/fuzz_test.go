package registry

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"minik8s.io/shared/scheme"
)

// seedManifests are the kind of input the apiserver sees from kubectl.
var seedManifests = []string{
	`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  containers:
  - name: web
    image: nginx:1.27
    ports: [{containerPort: 80, name: http}]
    resources: {requests: {cpu: 100m}, limits: {cpu: "1", memory: 128Mi}}
    livenessProbe: {httpGet: {path: /, port: http}}
    volumeMounts: [{name: data, mountPath: /data}]
    env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
  volumes: [{name: data, emptyDir: {}}]
`,
	`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0%}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`,
	`apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {type: NodePort, selector: {app: web}, ports: [{port: 80, targetPort: http, nodePort: 30080}]}
`,
	`apiVersion: batch/v1
kind: Job
metadata: {name: pi, namespace: default}
spec:
  completions: 3
  completionMode: Indexed
  template: {spec: {restartPolicy: Never, containers: [{name: pi, image: perl, command: [perl, -e, print 1]}]}}
`,
	`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]
  behavior: {scaleDown: {policies: [{type: Pods, value: 1, periodSeconds: 60}]}}
`,
	`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default}
spec:
  rules: [{host: a.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]
`,
	`apiVersion: serverless.minik8s.io/v1
kind: Function
metadata: {name: hello, namespace: default}
spec: {handler: main.handle, source: {main.py: "def handle(e):\n  return e\n"}, scale: {maxReplicas: 3}}
`,
	`apiVersion: serverless.minik8s.io/v1
kind: Workflow
metadata: {name: flow, namespace: default}
spec:
  startAt: a
  states:
    a: {type: Task, function: hello, next: b}
    b: {type: Choice, choices: [{variable: $.n, numericLessThan: 3, next: a}], default: c}
    c: {type: Succeed}
`,
	`apiVersion: serverless.minik8s.io/v1
kind: Workflow
metadata: {name: every-state, namespace: default}
spec:
  timeoutSeconds: 60
  startAt: p
  states:
    p: {type: Pass, result: {k: [1, 2]}, resultPath: $.r, next: w}
    w: {type: Wait, secondsPath: "$.r.k[0]", next: t}
    t:
      type: Task
      function: hello
      parameters: {"x.$": $.r, fixed: 1}
      retry: [{errorEquals: [ValueError], maxAttempts: 2, backoffRate: 1.5}]
      catch: [{errorEquals: [States.ALL], resultPath: $.error, next: f}]
      next: c
    c:
      type: Choice
      choices:
      - {and: [{variable: $.a, isPresent: true}, {not: {variable: $.b, stringEquals: x}}], next: par}
      default: m
    par: {type: Parallel, branches: [{startAt: a, states: {a: {type: Succeed}}}], next: m}
    m: {type: Map, itemsPath: $.items, maxConcurrency: 2, iterator: {startAt: i, states: {i: {type: Pass, end: true}}}, end: true}
    f: {type: Fail, error: Broken, cause: why}
`,
	`apiVersion: serverless.minik8s.io/v1
kind: WorkflowExecution
metadata: {name: flow-1, namespace: default}
spec: {workflow: flow, input: {"n": [1, "two", null]}}
`,
	`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"type":"kubernetes.io/tls","data":{"tls.crt":"YQ==","tls.key":"Yg=="}}`,
	`{"kind":"PersistentVolume","apiVersion":"v1","metadata":{"name":"pv"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/x"}}}`,
}

// FuzzDecodeValidate runs arbitrary bytes through what the apiserver does with a request body:
// YAML to JSON, decode into a served kind (pick chooses the kind when the body names none),
// default, and validate as a create and as updates. None of it may panic, defaulting must be
// idempotent, and bad input must never produce an internal error (a 500).
func FuzzDecodeValidate(f *testing.F) {
	for i, m := range seedManifests {
		f.Add(uint8(i), []byte(m))
	}
	f.Add(uint8(2), []byte(`{"spec":{"containers":[{}]}}`))
	f.Add(uint8(12), []byte(`spec: {minReplicas: 0, maxReplicas: -1, metrics: [{type: Pods}]}`))
	seeds := updateSeeds(f)
	sts := strategies(nil)
	decoder := scheme.Codecs.UniversalDeserializer()
	f.Fuzz(func(t *testing.T, pick uint8, data []byte) {
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return
		}
		gvk := scheme.Resources[int(pick)%len(scheme.Resources)].GVK
		obj, _, err := decoder.Decode(js, &gvk, nil)
		if err != nil {
			return
		}
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			return
		}
		res, ok := scheme.ByGVK(gvks[0])
		if !ok {
			return // lists, Status and other wire-only kinds are not stored
		}
		st := sts[res]
		st.Default(obj)
		again := obj.DeepCopyObject()
		st.Default(again)
		if !equality.Semantic.DeepEqual(obj, again) {
			t.Fatalf("defaults are not idempotent for %T", obj)
		}
		noInternal(t, "create", st.Validate(obj))
		noInternal(t, "update of itself", st.ValidateUpdate(obj.DeepCopyObject(), obj))
		seed := seeds[gvks[0].Kind]
		noInternal(t, "update of seed", st.ValidateUpdate(obj, seed))
		noInternal(t, "update to seed", st.ValidateUpdate(seed, obj))
		replaced := obj.DeepCopyObject()
		st.DefaultUpdate(replaced, seed)
		noInternal(t, "update after DefaultUpdate", st.ValidateUpdate(replaced, seed))
	})
}

func noInternal(t *testing.T, what string, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if e.Type == field.ErrorTypeInternal {
			t.Fatalf("%s: internal error: %v", what, e)
		}
	}
}

// updateSeeds holds one defaulted object per served kind, the "old" side of fuzzed updates:
// the seed manifests where they cover a kind, otherwise an empty object of the kind.
func updateSeeds(f *testing.F) map[string]runtime.Object {
	seeds := map[string]runtime.Object{}
	for _, r := range scheme.Resources {
		seeds[r.GVK.Kind] = r.New()
	}
	decoder := scheme.Codecs.UniversalDeserializer()
	for _, m := range seedManifests {
		js, err := yaml.YAMLToJSON([]byte(m))
		if err != nil {
			f.Fatalf("seed manifest: %v", err)
		}
		obj, gvk, err := decoder.Decode(js, nil, nil)
		if err != nil {
			f.Fatalf("seed manifest: %v", err)
		}
		seeds[gvk.Kind] = obj
	}
	sts := strategies(nil)
	for _, r := range scheme.Resources {
		sts[r].Default(seeds[r.GVK.Kind])
	}
	return seeds
}

// TestSeedManifestsValid keeps the fuzz seeds meaningful: they are real, valid manifests.
func TestSeedManifestsValid(t *testing.T) {
	decoder := scheme.Codecs.UniversalDeserializer()
	for _, m := range seedManifests {
		js, err := yaml.YAMLToJSON([]byte(m))
		if err != nil {
			t.Fatal(err)
		}
		obj, gvk, err := decoder.Decode(js, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, ok := scheme.ByGVK(*gvk)
		if !ok {
			t.Fatalf("seed of %s: not a served kind", gvk)
		}
		st := strategies(nil)[res]
		t.Run(gvk.Kind, func(t *testing.T) {
			st.Default(obj)
			if errs := st.Validate(obj); len(errs) > 0 {
				t.Errorf("seed %s is invalid: %v", gvk.Kind, errs.ToAggregate())
			}
		})
	}
}
