package serviceaccount

// DefaultIssuer is the iss of tokens when none is configured: the in-cluster name of the API,
// as kubeadm and kind clusters use.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// DefaultAPIAudiences are the audiences of the API itself when none are configured.
func DefaultAPIAudiences() []string { return []string{DefaultIssuer} }
