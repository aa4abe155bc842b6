// Package token keeps the ServiceAccount tokens the kubelet requests for its pods' projected
// volumes: one TokenRequest per pod, ServiceAccount, audience and lifetime, reused until it is
// older than 80% of its life or 24 hours, refreshed then, kept through failed refreshes until
// it expires, and forgotten with its pod. It follows Kubernetes' pkg/kubelet/token.
package token
