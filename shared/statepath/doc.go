// Package statepath reads and writes the JSON paths of workflow states ("$", "$.a.b",
// "$.items[0]", "$['a key']"), the subset of JSONPath that AWS Step Functions' InputPath,
// ResultPath, OutputPath and Choice variables use: no wildcards, filters or slices.
package statepath
