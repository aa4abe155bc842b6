// Package hpasuite measures how fast a HorizontalPodAutoscaler reacts on make up's cluster:
// from CPU load starting on a pod to the metrics API showing it, to the HPA's decision, and to
// the new pod Ready, against a direct scale of the same Deployment in the same run.
package hpasuite
