module minik8s.io/workloads

go 1.26.8

require github.com/google/go-cmp v0.7.0

require minik8s.io/shared v0.0.0

replace minik8s.io/shared => ../shared
