// Package build makes the image of one version of a Function in an image store (imagestore;
// Docker on the host): the function's source under /function on the runtime base
// (minik8s/python-runtime), its pip requirements installed into the image, tagged
// minik8s-fn/<namespace>.<name>:v<version>.
package build
