// Package redisstore keeps the gateways' call counters in Redis: one hash per function and
// second, with a time to live, and one sorted set of last call times.
package redisstore
