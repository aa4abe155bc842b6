module minik8s.io/serverless

go 1.26.8

replace minik8s.io/shared => ../shared

require (
	github.com/google/go-cmp v0.7.0
	github.com/redis/go-redis/v9 v9.7.3
	minik8s.io/shared v0.0.0-00010101000000-000000000000
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
)
