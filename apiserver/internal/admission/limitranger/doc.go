// Package limitranger applies a namespace's LimitRanges as Kubernetes' LimitRanger admission
// plugin does: a new pod's containers get the default requests and limits they lack, and pods
// and claims outside the minimums, maximums and limit-to-request ratios are refused.
package limitranger
