// Package app assembles the kubelet: node registration and lease, the desired pods from the
// node's RabbitMQ queue and periodic relists (cached in Redis), the pod workers on Docker and
// CNI, and the HTTPS server for logs and stats.
package app
