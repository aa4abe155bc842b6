// Package webhook holds EchoApp's admission webhooks: the mutating one gives an EchoApp
// without a tier the free tier, the validating one refuses messages with a forbidden word.
package webhook
