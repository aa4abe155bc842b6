// Package counters accounts a gateway's function calls in per-second buckets (calls started and
// the time-weighted number in flight) and keeps them in a Store that several gateways share, so
// the autoscaler reads the sum of every gateway's load.
package counters
