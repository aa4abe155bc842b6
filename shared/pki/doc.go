// Package pki makes the cluster's certificates with crypto/x509: a long-lived CA and serving
// certificates it signs, with the names and addresses clients dial. Keys are ECDSA P-256, small
// and fast to generate, which keeps setup and tests quick.
package pki
