module minik8s.io/kubelet

go 1.26.8

require minik8s.io/shared v0.0.0

replace minik8s.io/shared => ../shared
