// Package distribute puts a function's image on the nodes that run it. There is no registry:
// each node's kubelet says whether its engine has the image (GET /images/{ref}), and the
// ones that lack it get `docker save` from the local engine streamed to them (POST /images).
package distribute
