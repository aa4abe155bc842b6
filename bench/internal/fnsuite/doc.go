// Package fnsuite measures the serverless gateway on make up's cluster: a warm call through
// the gateway against a direct call to the same function pod in the same run, a cold start
// from zero pods to the first answer with the image built, and calls per second at
// saturation on one pod, through the gateway and directly.
package fnsuite
