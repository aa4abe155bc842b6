"""Drives the official Kubernetes Python client against a cluster and prints what it saw.

Usage: client.py KUBECONFIG NAMESPACE

For a core kind (ConfigMap) and an apps kind (Deployment) it lists, watches (in a thread,
from the list's resourceVersion), creates, patches and deletes, then prints one JSON object:
the events each watch saw and the values read back, for the Go test to check.
"""
import json
import sys
import threading

from kubernetes import client, config, watch


def watch_events(list_fn, namespace, resource_version, want, out, ready):
    """Collects (type, name) of watch events until `want` of them arrived."""
    w = watch.Watch()
    ready.set()
    for ev in w.stream(list_fn, namespace=namespace, resource_version=resource_version, timeout_seconds=60):
        out.append([ev["type"], ev["object"].metadata.name])
        if len(out) >= want:
            w.stop()


def exercise(kind, list_fn, create, patch, read, delete, body, patch_body, namespace):
    listed = list_fn(namespace=namespace)
    events, ready = [], threading.Event()
    t = threading.Thread(target=watch_events, args=(list_fn, namespace, listed.metadata.resource_version, 3, events, ready))
    t.start()
    ready.wait()
    created = create(namespace=namespace, body=body)
    patched = patch(name=body["metadata"]["name"], namespace=namespace, body=patch_body)
    got = read(name=body["metadata"]["name"], namespace=namespace)
    delete(name=body["metadata"]["name"], namespace=namespace)
    t.join(90)
    return {
        "listed": len(listed.items),
        "createdUID": bool(created.metadata.uid),
        "patched": client.ApiClient().sanitize_for_serialization(patched),
        "read": client.ApiClient().sanitize_for_serialization(got),
        "events": events,
        "watchAlive": t.is_alive(),
    }


def main():
    kubeconfig, namespace = sys.argv[1], sys.argv[2]
    config.load_kube_config(config_file=kubeconfig)
    core, apps = client.CoreV1Api(), client.AppsV1Api()
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    result = {"namespaces": [n.metadata.name for n in core.list_namespace().items]}
    result["configmaps"] = exercise(
        "ConfigMap", core.list_namespaced_config_map, core.create_namespaced_config_map,
        core.patch_namespaced_config_map, core.read_namespaced_config_map, core.delete_namespaced_config_map,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py-cm"}, "data": {"greeting": "hello"}},
        {"data": {"greeting": "patched"}}, namespace)
    labels = {"app": "py"}
    result["deployments"] = exercise(
        "Deployment", apps.list_namespaced_deployment, apps.create_namespaced_deployment,
        apps.patch_namespaced_deployment, apps.read_namespaced_deployment, apps.delete_namespaced_deployment,
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "py-deploy"},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"containers": [{"name": "c", "image": "minik8s/echo:1.0"}]}}}},
        {"spec": {"replicas": 3}}, namespace)
    core.delete_namespace(namespace)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
