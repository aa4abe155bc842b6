// Package fake is an in-memory imagestore.Store for unit tests of the serverless component. It
// reads a build context's Dockerfile as the classic builder does (FROM, COPY, LABEL, RUN; the
// same "Step i/n" output and error messages), gives images ids that are digests of their
// content, so the same context gives the same id in any store and a save and load keep it, and
// records every change. Tests script what RUN steps print and exit with (Run), mark images in
// use by a container (Use), and add ready-made images (Add).
package fake
