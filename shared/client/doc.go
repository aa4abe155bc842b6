// Package client is a small REST client for the Kubernetes API served by minik8s: HTTPS with the
// cluster CA and a bearer token, typed and unstructured access to every served resource, watch
// streams, server-side Tables and discovery. It replaces client-go for our components and kubectl.
package client
