// Package streaming serves the kubelet's interactive streams as Kubernetes clients speak them:
// exec and attach over WebSocket channel protocols (v5 with its close signal, v4, and the older
// binary and base64 ones) and over SPDY/3.1 (v5 to v1), and port-forward over SPDY, over
// SPDY tunnelled through a WebSocket, and over WebSocket channels. It knows nothing of pods:
// callers hand it what to run and where to dial.
package streaming
