module minik8s.io/serverless

go 1.26.8

replace minik8s.io/shared => ../shared

require minik8s.io/shared v0.0.0-00010101000000-000000000000
