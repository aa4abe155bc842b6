"""In-cluster API access with the official Python client, as the incluster image does it.

Each round lists pods and tries to list secrets with the pod's ServiceAccount token
(load_incluster_config), then prints one JSON line: the pods listed, the HTTP status of the
secrets attempt, the token file's iat, exp and sub claims read afresh, and the KUBERNETES_*
environment. INCLUSTER_INTERVAL (seconds, "5" or "5s") sets the pause between rounds;
INCLUSTER_ALL_NAMESPACES=true lists across the cluster.
"""

import base64
import json
import os
import sys
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TIMEOUT = 10


def claims(path):
    """The token's payload, unverified: the apiserver is the one that checks it."""
    with open(path) as f:
        payload = f.read().strip().split(".")[1]
    payload += "=" * (-len(payload) % 4)
    return json.loads(base64.urlsafe_b64decode(payload))


def one_round(v1, namespace):
    r = {"time": int(time.time()), "pods": -1, "podNames": None, "secretsCode": 0,
         "env": {k: v for k, v in os.environ.items() if k.startswith("KUBERNETES_")}}
    try:
        if namespace:
            pods = v1.list_namespaced_pod(namespace, _request_timeout=TIMEOUT)
        else:
            pods = v1.list_pod_for_all_namespaces(_request_timeout=TIMEOUT)
        r["pods"] = len(pods.items)
        r["podNames"] = sorted(p.metadata.namespace + "/" + p.metadata.name for p in pods.items)
    except Exception as e:  # an answer's status or the connection's failure: both are reported
        r["podsError"] = str(e)
    try:
        if namespace:
            v1.list_namespaced_secret(namespace, _request_timeout=TIMEOUT)
        else:
            v1.list_secret_for_all_namespaces(_request_timeout=TIMEOUT)
        r["secretsCode"] = 200
    except ApiException as e:
        r["secretsCode"] = e.status
        try:
            r["secretsError"] = json.loads(e.body)["message"]
        except (TypeError, ValueError, KeyError):
            r["secretsError"] = e.reason
    except Exception as e:
        r["secretsError"] = str(e)
    try:
        c = claims(os.path.join(SA_DIR, "token"))
        r["tokenIat"], r["tokenExp"], r["tokenSub"] = c.get("iat", 0), c.get("exp", 0), c.get("sub", "")
    except Exception as e:
        r["tokenError"] = str(e)
    return r


def main():
    interval = float(os.environ.get("INCLUSTER_INTERVAL", "5").rstrip("s"))
    everywhere = os.environ.get("INCLUSTER_ALL_NAMESPACES", "").lower() in ("1", "true")
    # The loader re-reads the token file every minute, so a token the kubelet refreshed is used.
    config.load_incluster_config()
    v1 = client.CoreV1Api()
    namespace = ""
    if not everywhere:
        with open(os.path.join(SA_DIR, "namespace")) as f:
            namespace = f.read().strip()
    while True:
        print(json.dumps(one_round(v1, namespace)), flush=True)
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main())
