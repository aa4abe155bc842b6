// Package imagestore is the seam between the serverless component and the image engine it
// builds function images in and sends them from: the Store interface in minik8s terms (build
// from a context, inspect, list by label, remove, save and load), with dockerstore over the
// Docker API, fake in memory for unit tests, and storetest the contract both keep.
package imagestore
