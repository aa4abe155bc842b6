// Package endpoints is the Endpoints controller: for every Service with a selector, a core/v1
// Endpoints of the same name listing its pods, ready ones in addresses and the others in
// notReadyAddresses, with each pod's ports resolved. Desired computes it (pure); the
// controller writes it only when it differs.
package endpoints
